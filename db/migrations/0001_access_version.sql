CREATE TABLE `access_version` (
	`id` integer PRIMARY KEY NOT NULL,
	`version` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `access_version` (`id`, `version`) VALUES (1, 0);
--> statement-breakpoint
CREATE TRIGGER `user_groups_insert_access` AFTER INSERT ON `user_groups` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `user_groups_update_access` AFTER UPDATE ON `user_groups` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `user_groups_delete_access` AFTER DELETE ON `user_groups` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `device_groups_insert_access` AFTER INSERT ON `device_groups` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `device_groups_update_access` AFTER UPDATE ON `device_groups` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `device_groups_delete_access` AFTER DELETE ON `device_groups` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 1; END;

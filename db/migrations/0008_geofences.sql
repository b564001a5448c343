CREATE TABLE `alert_states` (
	`device_key` integer PRIMARY KEY NOT NULL,
	`last_fix_ts` integer,
	`inside` text DEFAULT '[]' NOT NULL,
	`overspeed_since` integer,
	`overspeed_reported_ts` integer,
	`ignition` integer,
	`ignition_ts` integer,
	`online` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`device_key`) REFERENCES `devices`(`key`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `geofences` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`area` text NOT NULL,
	`groups` text DEFAULT '[]' NOT NULL,
	`speed_limit` real,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `geofences_account_name` ON `geofences` (`account_id`,`name`,`id`);--> statement-breakpoint
-- Row 5 of access_version counts changes to geofences, whichever process makes them: the alert
-- rules' in-memory geofences (src/alerts/cache.ts) are rebuilt when it moves.
INSERT INTO `access_version` (`id`, `version`) VALUES (5, 0);
--> statement-breakpoint
CREATE TRIGGER `geofences_insert_version` AFTER INSERT ON `geofences` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 5; END;
--> statement-breakpoint
CREATE TRIGGER `geofences_update_version` AFTER UPDATE ON `geofences` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 5; END;
--> statement-breakpoint
CREATE TRIGGER `geofences_delete_version` AFTER DELETE ON `geofences` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 5; END;

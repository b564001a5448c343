-- A device's model becomes optional (issue 20, item 2): null until its first report gives it the
-- built-in model of its protocol. SQLite cannot drop a NOT NULL in place, so the table is rebuilt:
-- every row with its key, then every index and trigger devices had (0000, 0002, 0011, 0012). The
-- migrations run with foreign keys off (db/client.ts: a PRAGMA inside the migrations' transaction
-- would do nothing), so dropping the old table deletes nothing through ON DELETE CASCADE, and
-- they are checked once the migrations are done.
CREATE TABLE `__new_devices` (
	`key` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`account_id` text NOT NULL,
	`model_id` text,
	`alias` text NOT NULL,
	`properties` text DEFAULT '{}' NOT NULL,
	`serial` text NOT NULL,
	`imei` text NOT NULL,
	`iccid` text DEFAULT '' NOT NULL,
	`state` text DEFAULT 'new' NOT NULL,
	`latitude` real,
	`longitude` real,
	`connected` integer DEFAULT false NOT NULL,
	`connected_at` integer,
	`disconnected_at` integer,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`model_id`) REFERENCES `models`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
INSERT INTO `__new_devices`("key", "id", "account_id", "model_id", "alias", "properties", "serial", "imei", "iccid", "state", "latitude", "longitude", "connected", "connected_at", "disconnected_at", "created_at", "updated_at") SELECT "key", "id", "account_id", "model_id", "alias", "properties", "serial", "imei", "iccid", "state", "latitude", "longitude", "connected", "connected_at", "disconnected_at", "created_at", "updated_at" FROM `devices`;--> statement-breakpoint
-- keys are never reused (positions, events and the alert rules rely on it): the new table's
-- AUTOINCREMENT counter starts where the old one was, even past devices since deleted
INSERT INTO `sqlite_sequence` (`name`, `seq`) SELECT '__new_devices', 0 FROM `sqlite_sequence` WHERE `name` = 'devices' AND NOT EXISTS (SELECT 1 FROM `sqlite_sequence` WHERE `name` = '__new_devices');--> statement-breakpoint
UPDATE `sqlite_sequence` SET `seq` = max(`seq`, (SELECT `seq` FROM `sqlite_sequence` WHERE `name` = 'devices')) WHERE `name` = '__new_devices' AND EXISTS (SELECT 1 FROM `sqlite_sequence` WHERE `name` = 'devices');--> statement-breakpoint
DROP TABLE `devices`;--> statement-breakpoint
ALTER TABLE `__new_devices` RENAME TO `devices`;--> statement-breakpoint
CREATE UNIQUE INDEX `devices_id` ON `devices` (`id`);--> statement-breakpoint
CREATE INDEX `devices_imei` ON `devices` (`imei`);--> statement-breakpoint
CREATE INDEX `devices_serial` ON `devices` (`serial`);--> statement-breakpoint
CREATE INDEX `devices_account` ON `devices` (`account_id`);--> statement-breakpoint
CREATE INDEX `devices_alias` ON `devices` (`alias`,`id`);--> statement-breakpoint
CREATE TRIGGER `devices_insert_identity` AFTER INSERT ON `devices` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 2; END;
--> statement-breakpoint
CREATE TRIGGER `devices_delete_identity` AFTER DELETE ON `devices` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 2; END;
--> statement-breakpoint
CREATE TRIGGER `devices_update_identity` AFTER UPDATE OF `imei`, `serial`, `state` ON `devices`
  WHEN OLD.`imei` IS NOT NEW.`imei` OR OLD.`serial` IS NOT NEW.`serial` OR ((OLD.`state` = 'unlink') <> (NEW.`state` = 'unlink'))
  BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 2; END;
--> statement-breakpoint
CREATE TRIGGER `devices_update_rules` AFTER UPDATE OF `account_id`, `properties` ON `devices`
  WHEN OLD.`account_id` IS NOT NEW.`account_id` OR OLD.`properties` IS NOT NEW.`properties`
  BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 7; END;
--> statement-breakpoint
CREATE TRIGGER `devices_delete_rules` AFTER DELETE ON `devices` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 7; END;

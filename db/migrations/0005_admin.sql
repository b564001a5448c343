CREATE TABLE `audit_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` text NOT NULL,
	`actor` text NOT NULL,
	`action` text NOT NULL,
	`object_type` text NOT NULL,
	`object_id` text NOT NULL,
	`at` integer NOT NULL,
	`request_id` text
);
--> statement-breakpoint
CREATE INDEX `audit_log_account_at` ON `audit_log` (`account_id`,`at`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`id_hash` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`last_used_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `sessions_user` ON `sessions` (`user_id`);--> statement-breakpoint
ALTER TABLE `api_keys` ADD `public_id` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `name` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `last_used_at` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `expires_at` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_public_id` ON `api_keys` (`public_id`);--> statement-breakpoint
CREATE INDEX `api_keys_user` ON `api_keys` (`user_id`);--> statement-breakpoint
ALTER TABLE `users` ADD `role` text DEFAULT 'member' NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `password_hash` text;--> statement-breakpoint
-- Sign-in names are unique, compared case-insensitively. Older imports allowed repeats: a
-- repeated name (after its first, oldest user) gets its user id's first 8 characters appended,
-- so the migration never fails and every user keeps a distinct name (none could sign in before).
UPDATE `users` SET `name` = `name` || '-' || substr(`id`, 1, 8)
  WHERE `name` <> '' AND EXISTS (SELECT 1 FROM `users` AS `first` WHERE lower(`first`.`name`) = lower(`users`.`name`)
    AND (`first`.`created_at` < `users`.`created_at` OR (`first`.`created_at` = `users`.`created_at` AND `first`.`id` < `users`.`id`)));
--> statement-breakpoint
CREATE UNIQUE INDEX `users_name` ON `users` (lower(`name`)) WHERE `name` <> '';
--> statement-breakpoint
-- Existing keys get their API id: a random version-4 UUID.
UPDATE `api_keys` SET `public_id` = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
  || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))) WHERE `public_id` IS NULL;
--> statement-breakpoint
-- Row 4 of access_version counts changes to credentials (keys, sessions, users' passwords, roles
-- and accounts): the key and session caches read it on every request, so a key revoked or a user
-- deleted by any process fails on the very next request.
INSERT INTO `access_version` (`id`, `version`) VALUES (4, 0);
--> statement-breakpoint
CREATE TRIGGER `api_keys_delete_credentials` AFTER DELETE ON `api_keys` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 4; END;
--> statement-breakpoint
CREATE TRIGGER `api_keys_update_credentials` AFTER UPDATE OF `user_id`, `hash`, `expires_at` ON `api_keys` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 4; END;
--> statement-breakpoint
CREATE TRIGGER `sessions_delete_credentials` AFTER DELETE ON `sessions` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 4; END;
--> statement-breakpoint
CREATE TRIGGER `users_delete_credentials` AFTER DELETE ON `users` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` IN (1, 4); END;
--> statement-breakpoint
-- a role decides reach (an admin reaches the whole account): row 1 too, which the access function reads
CREATE TRIGGER `users_update_credentials` AFTER UPDATE OF `role`, `password_hash`, `account_id` ON `users`
  WHEN OLD.`role` IS NOT NEW.`role` OR OLD.`password_hash` IS NOT NEW.`password_hash` OR OLD.`account_id` IS NOT NEW.`account_id`
  BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` IN (1, 4); END;
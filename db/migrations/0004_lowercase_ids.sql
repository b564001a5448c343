-- UUIDs are case-insensitive: the import now stores them in lower case and the API looks a path
-- id up in lower case. Imports before this version kept ids as written, so an older database may
-- hold upper-case ones: lower-case them, and every column naming them, in this one transaction.
-- A key is renamed before the rows naming it, so foreign keys are checked at commit instead.
-- An id whose lower-case form another row already has (the same UUID imported twice in two
-- cases) is left as it is: renaming either would break the primary key, and neither is lost.
PRAGMA defer_foreign_keys = ON;
--> statement-breakpoint
UPDATE `accounts` SET `id` = lower(`id`) WHERE `id` <> lower(`id`) AND lower(`id`) IN (SELECT lower(`id`) FROM `accounts` GROUP BY lower(`id`) HAVING count(*) = 1);
--> statement-breakpoint
UPDATE `models` SET `id` = lower(`id`) WHERE `id` <> lower(`id`) AND lower(`id`) IN (SELECT lower(`id`) FROM `models` GROUP BY lower(`id`) HAVING count(*) = 1);
--> statement-breakpoint
UPDATE `groups` SET `id` = lower(`id`) WHERE `id` <> lower(`id`) AND lower(`id`) IN (SELECT lower(`id`) FROM `groups` GROUP BY lower(`id`) HAVING count(*) = 1);
--> statement-breakpoint
UPDATE `users` SET `id` = lower(`id`) WHERE `id` <> lower(`id`) AND lower(`id`) IN (SELECT lower(`id`) FROM `users` GROUP BY lower(`id`) HAVING count(*) = 1);
--> statement-breakpoint
UPDATE `commands` SET `id` = lower(`id`) WHERE `id` <> lower(`id`) AND lower(`id`) IN (SELECT lower(`id`) FROM `commands` GROUP BY lower(`id`) HAVING count(*) = 1);
--> statement-breakpoint
UPDATE `devices` SET `id` = lower(`id`) WHERE `id` <> lower(`id`) AND lower(`id`) IN (SELECT lower(`id`) FROM `devices` GROUP BY lower(`id`) HAVING count(*) = 1);
--> statement-breakpoint
-- Each reference follows its key: one still written in upper case whose key is no longer there
-- was renamed above (a key left alone still matches, so its references stay too).
UPDATE `groups` SET `account_id` = lower(`account_id`) WHERE `account_id` <> lower(`account_id`) AND `account_id` NOT IN (SELECT `id` FROM `accounts`);
--> statement-breakpoint
UPDATE `users` SET `account_id` = lower(`account_id`) WHERE `account_id` <> lower(`account_id`) AND `account_id` NOT IN (SELECT `id` FROM `accounts`);
--> statement-breakpoint
UPDATE `devices` SET `account_id` = lower(`account_id`) WHERE `account_id` <> lower(`account_id`) AND `account_id` NOT IN (SELECT `id` FROM `accounts`);
--> statement-breakpoint
UPDATE `share_links` SET `account_id` = lower(`account_id`) WHERE `account_id` <> lower(`account_id`) AND `account_id` NOT IN (SELECT `id` FROM `accounts`);
--> statement-breakpoint
UPDATE `commands` SET `model_id` = lower(`model_id`) WHERE `model_id` <> lower(`model_id`) AND `model_id` NOT IN (SELECT `id` FROM `models`);
--> statement-breakpoint
UPDATE `devices` SET `model_id` = lower(`model_id`) WHERE `model_id` <> lower(`model_id`) AND `model_id` NOT IN (SELECT `id` FROM `models`);
--> statement-breakpoint
UPDATE `user_groups` SET `group_id` = lower(`group_id`) WHERE `group_id` <> lower(`group_id`) AND `group_id` NOT IN (SELECT `id` FROM `groups`);
--> statement-breakpoint
UPDATE `device_groups` SET `group_id` = lower(`group_id`) WHERE `group_id` <> lower(`group_id`) AND `group_id` NOT IN (SELECT `id` FROM `groups`);
--> statement-breakpoint
UPDATE `user_groups` SET `user_id` = lower(`user_id`) WHERE `user_id` <> lower(`user_id`) AND `user_id` NOT IN (SELECT `id` FROM `users`);
--> statement-breakpoint
UPDATE `api_keys` SET `user_id` = lower(`user_id`) WHERE `user_id` <> lower(`user_id`) AND `user_id` NOT IN (SELECT `id` FROM `users`);
--> statement-breakpoint
UPDATE `share_links` SET `created_by` = lower(`created_by`) WHERE `created_by` <> lower(`created_by`) AND `created_by` NOT IN (SELECT `id` FROM `users`);
--> statement-breakpoint
-- A server running on this file while `tracker migrate` runs drops its cached devices and share
-- tokens (rows 2 and 3), which hold ids; row 1 moved with any membership renamed above.
UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` IN (2, 3);

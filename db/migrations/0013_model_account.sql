ALTER TABLE `models` ADD `account_id` text REFERENCES accounts(id);--> statement-breakpoint
CREATE INDEX `models_account_name` ON `models` (`account_id`,`name`);--> statement-breakpoint
-- Models of older databases are server-wide (account_id null), as they were, except one an
-- account's admin made through the API (its audit entry says so: a user, not the CLI, created it)
-- that only that account's devices use: it becomes that account's, so its admin can still change it.
UPDATE `models` SET `account_id` = (
  SELECT `a`.`account_id` FROM `audit_log` `a`
  WHERE `a`.`object_type` = 'model' AND `a`.`action` = 'create' AND `a`.`actor` <> 'cli' AND `a`.`object_id` = `models`.`id`
  ORDER BY `a`.`id` LIMIT 1
)
WHERE `id` IN (
  SELECT `a`.`object_id` FROM `audit_log` `a` JOIN `accounts` ON `accounts`.`id` = `a`.`account_id`
  WHERE `a`.`object_type` = 'model' AND `a`.`action` = 'create' AND `a`.`actor` <> 'cli'
    AND NOT EXISTS (SELECT 1 FROM `devices` `d` WHERE `d`.`model_id` = `a`.`object_id` AND `d`.`account_id` <> `a`.`account_id`)
);

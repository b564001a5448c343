-- Row 7 of access_version counts changes to what the alert rules read of a device (its account,
-- its properties: the speed limit): the rules keep each device's in memory and read it again when
-- this moves. A device added or deleted needs no count: keys are never reused.
INSERT INTO `access_version` (`id`, `version`) VALUES (7, 0);
--> statement-breakpoint
CREATE TRIGGER `devices_update_rules` AFTER UPDATE OF `account_id`, `properties` ON `devices`
  WHEN OLD.`account_id` IS NOT NEW.`account_id` OR OLD.`properties` IS NOT NEW.`properties`
  BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 7; END;

-- Row 2 of access_version counts changes to which device an identifier (IMEI, serial) names and
-- whether it may report: the ingest pipeline's device cache reads it to notice an import at once.
INSERT INTO `access_version` (`id`, `version`) VALUES (2, 0);
--> statement-breakpoint
CREATE TRIGGER `devices_insert_identity` AFTER INSERT ON `devices` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 2; END;
--> statement-breakpoint
CREATE TRIGGER `devices_delete_identity` AFTER DELETE ON `devices` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 2; END;
--> statement-breakpoint
CREATE TRIGGER `devices_update_identity` AFTER UPDATE OF `imei`, `serial`, `state` ON `devices`
  WHEN OLD.`imei` IS NOT NEW.`imei` OR OLD.`serial` IS NOT NEW.`serial` OR ((OLD.`state` = 'unlink') <> (NEW.`state` = 'unlink'))
  BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 2; END;

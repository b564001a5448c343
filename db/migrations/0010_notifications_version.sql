-- Row 6 of access_version counts changes to notification channels, whichever process makes them:
-- the outbox (src/alerts/outbox.ts) keeps the enabled channels in memory and reads them again
-- when it moves, instead of querying them for every event it queues.
INSERT INTO `access_version` (`id`, `version`) VALUES (6, 0);
--> statement-breakpoint
CREATE TRIGGER `notifications_insert_version` AFTER INSERT ON `notifications` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 6; END;
--> statement-breakpoint
CREATE TRIGGER `notifications_update_version` AFTER UPDATE ON `notifications` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 6; END;
--> statement-breakpoint
CREATE TRIGGER `notifications_delete_version` AFTER DELETE ON `notifications` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 6; END;

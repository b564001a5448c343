CREATE INDEX `share_link_devices_device` ON `share_link_devices` (`device_key`);--> statement-breakpoint
-- Nothing crosses accounts. Imports before this version could leave a device or a user in a
-- group of another account (a device moved by `import --upsert` kept its groups), and a moved
-- device in its old account's share links: remove those, and revoke a link left with no device.
DELETE FROM `device_groups` WHERE `group_id` IN (SELECT g.`id` FROM `groups` g JOIN `devices` d ON d.`key` = `device_groups`.`device_key` WHERE g.`account_id` <> d.`account_id`);
--> statement-breakpoint
DELETE FROM `user_groups` WHERE `group_id` IN (SELECT g.`id` FROM `groups` g JOIN `users` u ON u.`id` = `user_groups`.`user_id` WHERE g.`account_id` <> u.`account_id`);
--> statement-breakpoint
DELETE FROM `share_link_devices` WHERE `link_id` IN (SELECT l.`id` FROM `share_links` l JOIN `devices` d ON d.`key` = `share_link_devices`.`device_key` WHERE l.`account_id` <> d.`account_id`);
--> statement-breakpoint
UPDATE `share_links` SET `revoked` = 1 WHERE `revoked` = 0 AND NOT EXISTS (SELECT 1 FROM `share_link_devices` s WHERE s.`link_id` = `share_links`.`id`);
--> statement-breakpoint
-- Row 3 of access_version counts devices leaving share links (deleted, or a row changed), by
-- any process: the share token cache reads it on each lookup and starts over when it moved, so
-- a cached token never serves a device its link no longer holds. An insert is left out: only
-- link creation inserts alone (a new link is in no cache), and a patch deletes first.
INSERT INTO `access_version` (`id`, `version`) VALUES (3, 0);
--> statement-breakpoint
CREATE TRIGGER `share_link_devices_delete_access` AFTER DELETE ON `share_link_devices` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 3; END;
--> statement-breakpoint
CREATE TRIGGER `share_link_devices_update_access` AFTER UPDATE ON `share_link_devices` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 3; END;

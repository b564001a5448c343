CREATE INDEX `share_links_created_by` ON `share_links` (`created_by`);
--> statement-breakpoint
-- A share link ends with its creator (issue 19, item 9): it serves only the devices the user who
-- made it still reaches (an admin: the account's; a member: those of their groups). A device they
-- no longer reach leaves the link, and a link left with none is revoked (src/share/creators.ts does
-- so at the end of every change of groups, roles or accounts); deleting the user revokes every link
-- they made (the trigger below). Here, once, for the links that exist.
UPDATE `share_links` SET `revoked` = 1, `updated_at` = cast(unixepoch('subsec') * 1000 as integer) WHERE `revoked` = 0 AND NOT EXISTS (SELECT 1 FROM `share_link_devices` s WHERE s.`link_id` = `share_links`.`id` AND EXISTS (SELECT 1 FROM `share_links` l JOIN `users` u ON u.`id` = l.`created_by` AND u.`account_id` = l.`account_id` JOIN `devices` d ON d.`key` = s.`device_key` AND d.`account_id` = u.`account_id` WHERE l.`id` = `share_links`.`id` AND (u.`role` = 'admin' OR EXISTS (SELECT 1 FROM `user_groups` ug JOIN `device_groups` dg ON dg.`group_id` = ug.`group_id` WHERE ug.`user_id` = u.`id` AND dg.`device_key` = s.`device_key`))));
--> statement-breakpoint
DELETE FROM `share_link_devices` WHERE `link_id` IN (SELECT `id` FROM `share_links` WHERE `revoked` = 0) AND NOT EXISTS (SELECT 1 FROM `share_links` l JOIN `users` u ON u.`id` = l.`created_by` AND u.`account_id` = l.`account_id` JOIN `devices` d ON d.`key` = `share_link_devices`.`device_key` AND d.`account_id` = u.`account_id` WHERE l.`id` = `share_link_devices`.`link_id` AND (u.`role` = 'admin' OR EXISTS (SELECT 1 FROM `user_groups` ug JOIN `device_groups` dg ON dg.`group_id` = ug.`group_id` WHERE ug.`user_id` = u.`id` AND dg.`device_key` = `share_link_devices`.`device_key`)));
--> statement-breakpoint
-- Row 3 of access_version also counts links revoked, by any process: the share token cache starts
-- over and live streams re-read their devices (and end when their link has) on the next request.
CREATE TRIGGER `share_links_revoked_access` AFTER UPDATE OF `revoked` ON `share_links` WHEN OLD.`revoked` = 0 AND NEW.`revoked` = 1 BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 3; END;
--> statement-breakpoint
-- The user goes, by any process: every link they made is revoked first (created_by then becomes null).
CREATE TRIGGER `users_delete_share_links` BEFORE DELETE ON `users` BEGIN UPDATE `share_links` SET `revoked` = 1, `updated_at` = cast(unixepoch('subsec') * 1000 as integer) WHERE `created_by` = OLD.`id` AND `revoked` = 0; END;

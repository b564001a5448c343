-- Row 7 of access_version also counts devices deleted: the alert rules then forget what they keep
-- in memory (a deleted device's account, speed limit and state), instead of deriving for it and
-- writing state the foreign key refuses (0011 counted only updates).
CREATE TRIGGER `devices_delete_rules` AFTER DELETE ON `devices` BEGIN UPDATE `access_version` SET `version` = `version` + 1 WHERE `id` = 7; END;

-- The delivery worker reads each channel's due deliveries on their own (fair shares across accounts
-- and channels, issue 19): an index by channel, then due time, replaces the one by due time alone
-- (which only the server-wide query used).
DROP INDEX `notification_deliveries_due`;--> statement-breakpoint
CREATE INDEX `notification_deliveries_channel_due` ON `notification_deliveries` (`notification_id`,`kind`,`status`,`next_attempt_at`);
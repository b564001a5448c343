-- A user's own email alerts (issue 20, item 4): a notifications row with user_id set is that
-- user's personal email channel, matched against the devices they reach and hidden from the
-- admins' /notifications; it goes with the user (ON DELETE CASCADE, which drizzle-kit leaves out
-- of ADD COLUMN). One a user. Rows made before keep user_id null: account channels as they were.
ALTER TABLE `notifications` ADD `user_id` text REFERENCES users(id) ON DELETE cascade;--> statement-breakpoint
CREATE UNIQUE INDEX `notifications_user` ON `notifications` (`user_id`);

CREATE TABLE `notification_deliveries` (
	`key` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`notification_id` text NOT NULL,
	`kind` text NOT NULL,
	`device_key` integer,
	`payload` text,
	`fixes` integer,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_status_code` integer,
	`last_error` text,
	`next_attempt_at` integer,
	`created_at` integer NOT NULL,
	`delivered_at` integer,
	FOREIGN KEY (`notification_id`) REFERENCES `notifications`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `notification_deliveries_id` ON `notification_deliveries` (`id`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_notification` ON `notification_deliveries` (`notification_id`,`key`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_due` ON `notification_deliveries` (`kind`,`status`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_head` ON `notification_deliveries` (`notification_id`,`kind`,`status`,`key`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_status_created` ON `notification_deliveries` (`status`,`created_at`);--> statement-breakpoint
CREATE TABLE `notifications` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`events` text DEFAULT '[]' NOT NULL,
	`groups` text DEFAULT '[]' NOT NULL,
	`positions` integer DEFAULT false NOT NULL,
	`channel_type` text NOT NULL,
	`url` text NOT NULL,
	`secret` text,
	`enabled` integer DEFAULT true NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `notifications_account_name` ON `notifications` (`account_id`,`name`,`id`);
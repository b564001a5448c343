CREATE TABLE `report_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`schedule_id` text NOT NULL,
	`period_key` text,
	`period_from` integer NOT NULL,
	`period_to` integer NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`error` text,
	`next_attempt_at` integer,
	`created_at` integer NOT NULL,
	`sent_at` integer,
	FOREIGN KEY (`schedule_id`) REFERENCES `report_schedules`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `report_runs_period` ON `report_runs` (`period_key`);--> statement-breakpoint
CREATE INDEX `report_runs_schedule` ON `report_runs` (`schedule_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `report_runs_due` ON `report_runs` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE TABLE `report_schedules` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`user_id` text NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`devices` text DEFAULT '[]' NOT NULL,
	`groups` text DEFAULT '[]' NOT NULL,
	`period` text NOT NULL,
	`at` text NOT NULL,
	`tz` text NOT NULL,
	`format` text NOT NULL,
	`recipients` text DEFAULT '[]' NOT NULL,
	`webhook_id` text,
	`enabled` integer DEFAULT true NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`webhook_id`) REFERENCES `notifications`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `report_schedules_account_name` ON `report_schedules` (`account_id`,`name`,`id`);--> statement-breakpoint
CREATE INDEX `report_schedules_user` ON `report_schedules` (`user_id`);
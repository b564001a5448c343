CREATE TABLE `sent_commands` (
	`key` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`device_key` integer NOT NULL,
	`command_id` text NOT NULL,
	`name` text NOT NULL,
	`text` text NOT NULL,
	`payload` text,
	`status` text NOT NULL,
	`user_id` text,
	`created_at` integer NOT NULL,
	`sent_at` integer,
	`answered_at` integer,
	`expires_at` integer NOT NULL,
	`response` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`resend_due` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`device_key`) REFERENCES `devices`(`key`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sent_commands_id` ON `sent_commands` (`id`);--> statement-breakpoint
CREATE INDEX `sent_commands_device` ON `sent_commands` (`device_key`,`status`,`key`);--> statement-breakpoint
CREATE INDEX `sent_commands_device_key` ON `sent_commands` (`device_key`,`key`);--> statement-breakpoint
CREATE INDEX `sent_commands_status_expires` ON `sent_commands` (`status`,`expires_at`);--> statement-breakpoint
ALTER TABLE `commands` ADD `send` text;
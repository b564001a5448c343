CREATE TABLE `accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` text NOT NULL,
	`hash` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash` ON `api_keys` (`hash`);--> statement-breakpoint
CREATE TABLE `commands` (
	`id` text PRIMARY KEY NOT NULL,
	`model_id` text NOT NULL,
	`name` text NOT NULL,
	`widget` text NOT NULL,
	`ordinal` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`model_id`) REFERENCES `models`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `commands_model` ON `commands` (`model_id`,`ordinal`);--> statement-breakpoint
CREATE TABLE `device_groups` (
	`group_id` text NOT NULL,
	`device_key` integer NOT NULL,
	PRIMARY KEY(`group_id`, `device_key`),
	FOREIGN KEY (`group_id`) REFERENCES `groups`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`device_key`) REFERENCES `devices`(`key`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `device_groups_device` ON `device_groups` (`device_key`);--> statement-breakpoint
CREATE TABLE `devices` (
	`key` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`account_id` text NOT NULL,
	`model_id` text NOT NULL,
	`alias` text NOT NULL,
	`properties` text DEFAULT '{}' NOT NULL,
	`serial` text NOT NULL,
	`imei` text NOT NULL,
	`iccid` text DEFAULT '' NOT NULL,
	`state` text DEFAULT 'new' NOT NULL,
	`latitude` real,
	`longitude` real,
	`connected` integer DEFAULT false NOT NULL,
	`connected_at` integer,
	`disconnected_at` integer,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`model_id`) REFERENCES `models`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `devices_id` ON `devices` (`id`);--> statement-breakpoint
CREATE INDEX `devices_imei` ON `devices` (`imei`);--> statement-breakpoint
CREATE INDEX `devices_serial` ON `devices` (`serial`);--> statement-breakpoint
CREATE INDEX `devices_account` ON `devices` (`account_id`);--> statement-breakpoint
CREATE INDEX `devices_alias` ON `devices` (`alias`,`id`);--> statement-breakpoint
CREATE TABLE `events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`device` integer NOT NULL,
	`ts` integer NOT NULL,
	`alarm_code` text NOT NULL,
	`context` text DEFAULT '{}' NOT NULL,
	`speed` integer,
	`satellite` integer,
	`latitude` real,
	`longitude` real,
	`mcc` integer,
	`mnc` integer,
	`dbm` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `events_device_ts_code` ON `events` (`device`,`ts`,`alarm_code`);--> statement-breakpoint
CREATE TABLE `groups` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `groups_account` ON `groups` (`account_id`);--> statement-breakpoint
CREATE TABLE `models` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`protocol` text
);
--> statement-breakpoint
CREATE TABLE `permissions` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`description` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `positions` (
	`device` integer NOT NULL,
	`ts` integer NOT NULL,
	`lat` integer NOT NULL,
	`lon` integer NOT NULL,
	`speed` integer,
	`course` integer,
	`altitude` integer,
	`satellites` integer,
	`flags` integer DEFAULT 0 NOT NULL,
	`attributes` text,
	PRIMARY KEY(`device`, `ts`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `share_link_devices` (
	`link_id` text NOT NULL,
	`device_key` integer NOT NULL,
	`ordinal` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`link_id`, `device_key`),
	FOREIGN KEY (`link_id`) REFERENCES `share_links`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`device_key`) REFERENCES `devices`(`key`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `share_links` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`created_by` text,
	`token` text NOT NULL,
	`short_code` text NOT NULL,
	`acl` text NOT NULL,
	`revoked` integer DEFAULT false NOT NULL,
	`expires_at` integer NOT NULL,
	`unique_views` integer DEFAULT 0 NOT NULL,
	`last_accessed_at` integer,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `share_links_token` ON `share_links` (`token`);--> statement-breakpoint
CREATE UNIQUE INDEX `share_links_short_code` ON `share_links` (`short_code`);--> statement-breakpoint
CREATE INDEX `share_links_account` ON `share_links` (`account_id`);--> statement-breakpoint
CREATE TABLE `share_viewers` (
	`link_id` text NOT NULL,
	`viewer` text NOT NULL,
	`first_seen_at` integer NOT NULL,
	PRIMARY KEY(`link_id`, `viewer`),
	FOREIGN KEY (`link_id`) REFERENCES `share_links`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `user_groups` (
	`user_id` text NOT NULL,
	`group_id` text NOT NULL,
	PRIMARY KEY(`user_id`, `group_id`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`group_id`) REFERENCES `groups`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `user_groups_group` ON `user_groups` (`group_id`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `users_account` ON `users` (`account_id`);--> statement-breakpoint
INSERT INTO `permissions` (`id`, `name`, `description`) VALUES
  ('a3c1f6d0-2b7e-4f5a-8c9d-000000000001', 'location', 'See the shared devices and their live location (list, detail, live stream)'),
  ('a3c1f6d0-2b7e-4f5a-8c9d-000000000002', 'history', 'Read the route, stops and travels of the shared devices'),
  ('a3c1f6d0-2b7e-4f5a-8c9d-000000000003', 'events', 'Read the events and alarms of the shared devices');

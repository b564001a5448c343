CREATE TABLE `device_status` (
	`device_key` integer PRIMARY KEY NOT NULL,
	`attributes` text DEFAULT '{}' NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`device_key`) REFERENCES `devices`(`key`) ON UPDATE no action ON DELETE cascade
);

-- Events keyed (device, ts, alarm_code, seq): two events of one code may share a second. Every
-- stored row keeps seq 0 (they were unique on (device, ts, alarm_code)); no row is rewritten.
DROP INDEX `events_device_ts_code`;--> statement-breakpoint
ALTER TABLE `events` ADD `seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `events_device_ts_code_seq` ON `events` (`device`,`ts`,`alarm_code`,`seq`);
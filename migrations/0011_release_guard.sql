CREATE TABLE `channel_guards` (
	`mini_app_id` text NOT NULL,
	`channel` text NOT NULL,
	`enabled` integer DEFAULT false NOT NULL,
	`max_failure_rate` real DEFAULT 0.05 NOT NULL,
	`min_devices` integer DEFAULT 20 NOT NULL,
	`updated_at` text NOT NULL,
	`release_id` text,
	`failed_devices` integer,
	`total_devices` integer,
	`checked_at` text,
	`resumed_failed_devices` integer,
	`trip_release_id` text,
	`trip_failed_devices` integer,
	`trip_total_devices` integer,
	`trip_max_failure_rate` real,
	`tripped_at` text,
	PRIMARY KEY(`mini_app_id`, `channel`),
	FOREIGN KEY (`mini_app_id`) REFERENCES `mini_apps`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `guard_device_sketches` (
	`release_id` text NOT NULL,
	`kind` text NOT NULL,
	`hashes` text,
	`registers` blob,
	PRIMARY KEY(`release_id`, `kind`)
);

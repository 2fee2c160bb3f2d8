CREATE TABLE `insight_channel_device_sketches` (
	`version_id` text NOT NULL,
	`day` text NOT NULL,
	`channel` text NOT NULL,
	`hashes` text,
	`registers` blob,
	PRIMARY KEY(`version_id`, `day`, `channel`)
);

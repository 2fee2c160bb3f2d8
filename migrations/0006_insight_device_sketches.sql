-- Active devices become one sketch per version and day (src/modules/insights/sketch.ts) instead of a
-- row per device: every new device was an insert at a random place of one B-tree. WITHOUT ROWID
-- (added by hand, as in 0004): the primary key is the only lookup. The rows of schema 6 move over
-- as each version and day's hashes, concatenated; a sketch with more than 2,048 of them turns into
-- registers the next time it is read.
CREATE TABLE `insight_device_sketches` (
	`version_id` text NOT NULL,
	`day` text NOT NULL,
	`hashes` text,
	`registers` blob,
	PRIMARY KEY(`version_id`, `day`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `insight_device_sketches` (`version_id`, `day`, `hashes`) SELECT `version_id`, `day`, group_concat(`device_hash`, '') FROM `insight_devices` GROUP BY `version_id`, `day`;
--> statement-breakpoint
DROP TABLE `insight_devices`;

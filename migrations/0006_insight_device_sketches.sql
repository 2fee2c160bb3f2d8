-- Active devices become one sketch per version and day (src/modules/insights/sketch.ts) instead of a
-- row per device: every new device was an insert at a random place of one B-tree. A rowid table,
-- unlike 0004's: a sketch is up to 45 KB, and SQLite keeps rows that large better outside the
-- primary key's B-tree. The rows of schema 6 move over as each version and day's hashes,
-- concatenated (added by hand); a sketch with more than 2,048 of them is rewritten as registers by
-- the first prune (at the next start).
CREATE TABLE `insight_device_sketches` (
	`version_id` text NOT NULL,
	`day` text NOT NULL,
	`hashes` text,
	`registers` blob,
	PRIMARY KEY(`version_id`, `day`)
);
--> statement-breakpoint
INSERT INTO `insight_device_sketches` (`version_id`, `day`, `hashes`) SELECT `version_id`, `day`, group_concat(`device_hash`, '') FROM `insight_devices` GROUP BY `version_id`, `day`;
--> statement-breakpoint
DROP TABLE `insight_devices`;

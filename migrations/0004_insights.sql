-- insight_counts and insight_devices are WITHOUT ROWID (added by hand: drizzle cannot say it): their
-- primary key is their only lookup, so a row is one B-tree write instead of a table's and an index's.
CREATE TABLE `insight_counts` (
	`version_id` text NOT NULL,
	`day` text NOT NULL,
	`platform` text NOT NULL,
	`channel` text NOT NULL,
	`mini_app_id` text NOT NULL,
	`install_infos` integer DEFAULT 0 NOT NULL,
	`update_checks` integer DEFAULT 0 NOT NULL,
	`downloads` integer DEFAULT 0 NOT NULL,
	`installed` integer DEFAULT 0 NOT NULL,
	`launched` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`rolled_back` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`version_id`, `day`, `platform`, `channel`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `insight_counts_app_day` ON `insight_counts` (`mini_app_id`,`day`);--> statement-breakpoint
CREATE TABLE `insight_devices` (
	`version_id` text NOT NULL,
	`day` text NOT NULL,
	`device_hash` text NOT NULL,
	PRIMARY KEY(`version_id`, `day`, `device_hash`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `insight_failures` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`version_id` text NOT NULL,
	`mini_app_id` text NOT NULL,
	`platform` text NOT NULL,
	`message` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `insight_failures_version` ON `insight_failures` (`version_id`,`id`);--> statement-breakpoint
CREATE INDEX `insight_failures_app` ON `insight_failures` (`mini_app_id`,`id`);
CREATE TABLE `channel_releases` (
	`id` text PRIMARY KEY NOT NULL,
	`mini_app_id` text NOT NULL,
	`channel` text NOT NULL,
	`version_id` text NOT NULL,
	`seq` integer NOT NULL,
	`rollout_percent` integer NOT NULL,
	`host_version_range` text,
	`mandatory` integer DEFAULT false NOT NULL,
	`withdrawn_at` text,
	`created_by` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`mini_app_id`) REFERENCES `mini_apps`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`version_id`) REFERENCES `versions`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `channel_releases_channel` ON `channel_releases` (`mini_app_id`,`channel`,`seq`);--> statement-breakpoint
CREATE INDEX `channel_releases_version` ON `channel_releases` (`version_id`);--> statement-breakpoint
CREATE TABLE `channels` (
	`mini_app_id` text NOT NULL,
	`name` text NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	PRIMARY KEY(`mini_app_id`, `name`),
	FOREIGN KEY (`mini_app_id`) REFERENCES `mini_apps`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `mini_apps` ADD `experience_public` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `release_history` ADD `channel` text DEFAULT 'stable' NOT NULL;--> statement-breakpoint
ALTER TABLE `release_history` ADD `rollout_percent` integer;--> statement-breakpoint
ALTER TABLE `versions` ADD `channel` text DEFAULT 'stable' NOT NULL;--> statement-breakpoint
CREATE INDEX `versions_mini_app_build` ON `versions` (`mini_app_id`,`build_number`);--> statement-breakpoint
INSERT INTO `channel_releases` (`id`, `mini_app_id`, `channel`, `version_id`, `seq`, `rollout_percent`, `host_version_range`, `mandatory`, `withdrawn_at`, `created_by`, `created_at`)
SELECT lower(hex(randomblob(16))), `id`, 'stable', `current_release_version_id`, 1, 100, NULL, 0, NULL, NULL, `updated_at` FROM `mini_apps` WHERE `current_release_version_id` IS NOT NULL;

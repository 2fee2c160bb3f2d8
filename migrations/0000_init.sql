CREATE TABLE `audit_logs` (
	`id` text PRIMARY KEY NOT NULL,
	`actor_id` text,
	`actor_email` text,
	`action` text NOT NULL,
	`target_type` text NOT NULL,
	`target_id` text,
	`summary` text NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_logs_created_at` ON `audit_logs` (`created_at`);--> statement-breakpoint
CREATE TABLE `cli_sessions` (
	`code` text PRIMARY KEY NOT NULL,
	`status` text NOT NULL,
	`user_id` text,
	`expires_at` text NOT NULL,
	`created_at` text NOT NULL,
	`approved_at` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `mini_app_members` (
	`mini_app_id` text NOT NULL,
	`user_id` text NOT NULL,
	`role` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`mini_app_id`, `user_id`),
	FOREIGN KEY (`mini_app_id`) REFERENCES `mini_apps`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `mini_app_members_user` ON `mini_app_members` (`user_id`);--> statement-breakpoint
CREATE TABLE `mini_apps` (
	`id` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`icon_url` text,
	`current_experience_version_id` text,
	`current_review_version_id` text,
	`current_release_version_id` text,
	`next_build_number` integer DEFAULT 1 NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `mini_apps_app_id_unique` ON `mini_apps` (`app_id`);--> statement-breakpoint
CREATE TABLE `release_history` (
	`id` text PRIMARY KEY NOT NULL,
	`mini_app_id` text NOT NULL,
	`action` text NOT NULL,
	`version_id` text NOT NULL,
	`version` text NOT NULL,
	`previous_version_id` text,
	`notes` text,
	`actor_id` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`mini_app_id`) REFERENCES `mini_apps`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `release_history_mini_app` ON `release_history` (`mini_app_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`email` text NOT NULL,
	`display_name` text NOT NULL,
	`password_hash` text NOT NULL,
	`role` text NOT NULL,
	`status` text NOT NULL,
	`token_version` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_unique` ON `users` (`email`);--> statement-breakpoint
CREATE TABLE `versions` (
	`id` text PRIMARY KEY NOT NULL,
	`mini_app_id` text NOT NULL,
	`version` text NOT NULL,
	`build_number` integer NOT NULL,
	`release_type` text NOT NULL,
	`status` text NOT NULL,
	`changelog` text,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`published_at` text,
	`bundle_ios_sha256` text NOT NULL,
	`bundle_ios_size` integer NOT NULL,
	`bundle_android_sha256` text NOT NULL,
	`bundle_android_size` integer NOT NULL,
	`manifest_sha256` text NOT NULL,
	`manifest_size` integer NOT NULL,
	`assets_ios_sha256` text NOT NULL,
	`assets_ios_size` integer NOT NULL,
	`assets_android_sha256` text NOT NULL,
	`assets_android_size` integer NOT NULL,
	FOREIGN KEY (`mini_app_id`) REFERENCES `mini_apps`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `versions_mini_app_version` ON `versions` (`mini_app_id`,`version`);
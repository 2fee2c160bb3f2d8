CREATE TABLE `signing_keys` (
	`mini_app_id` text NOT NULL,
	`key_id` text NOT NULL,
	`name` text NOT NULL,
	`public_key` text NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	`revoked_at` text,
	PRIMARY KEY(`mini_app_id`, `key_id`),
	FOREIGN KEY (`mini_app_id`) REFERENCES `mini_apps`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `version_signatures` (
	`version_id` text PRIMARY KEY NOT NULL,
	`key_id` text NOT NULL,
	`statement` text NOT NULL,
	`value` text NOT NULL,
	`signed_by` text,
	`signed_at` text NOT NULL,
	FOREIGN KEY (`version_id`) REFERENCES `versions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`signed_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `mini_apps` ADD `require_signature` integer DEFAULT false NOT NULL;
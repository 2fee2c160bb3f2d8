DROP INDEX `audit_logs_created_at`;--> statement-breakpoint
CREATE INDEX `audit_logs_created_at_id` ON `audit_logs` (`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `users_created_at` ON `users` (`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `versions_mini_app_status_build` ON `versions` (`mini_app_id`,`status`,`build_number`);
ALTER TABLE `channel_releases` ADD `paused_at` text;--> statement-breakpoint
ALTER TABLE `channel_releases` ADD `paused_by` text;--> statement-breakpoint
ALTER TABLE `channel_releases` ADD `pause_reason` text;
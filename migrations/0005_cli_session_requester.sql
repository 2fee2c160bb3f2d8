ALTER TABLE `cli_sessions` ADD `requester_address` text;--> statement-breakpoint
ALTER TABLE `cli_sessions` ADD `requester_user_agent` text;
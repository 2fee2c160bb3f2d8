CREATE TABLE `version_files` (
	`version_id` text NOT NULL,
	`kind` text NOT NULL,
	`sha256` text NOT NULL,
	`size` integer NOT NULL,
	PRIMARY KEY(`version_id`, `kind`),
	FOREIGN KEY (`version_id`) REFERENCES `versions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `version_files_sha256` ON `version_files` (`sha256`);--> statement-breakpoint
INSERT INTO `version_files` (`version_id`, `kind`, `sha256`, `size`)
SELECT `id`, 'bundleIos', `bundle_ios_sha256`, `bundle_ios_size` FROM `versions`
UNION ALL SELECT `id`, 'bundleAndroid', `bundle_android_sha256`, `bundle_android_size` FROM `versions`
UNION ALL SELECT `id`, 'manifest', `manifest_sha256`, `manifest_size` FROM `versions`
UNION ALL SELECT `id`, 'assetsIos', `assets_ios_sha256`, `assets_ios_size` FROM `versions`
UNION ALL SELECT `id`, 'assetsAndroid', `assets_android_sha256`, `assets_android_size` FROM `versions`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `bundle_ios_sha256`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `bundle_ios_size`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `bundle_android_sha256`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `bundle_android_size`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `manifest_sha256`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `manifest_size`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `assets_ios_sha256`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `assets_ios_size`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `assets_android_sha256`;--> statement-breakpoint
ALTER TABLE `versions` DROP COLUMN `assets_android_size`;
// The version lifecycle (decisions §5) as one table: which action may move a version from which status, and where to.
export type VersionStatus = 'DRAFT' | 'IN_REVIEW' | 'PUBLISHED'

export const versionStatuses = ['DRAFT', 'IN_REVIEW', 'PUBLISHED'] as const satisfies readonly VersionStatus[]

/** What a version becomes when it is deleted: the row and its unshared files are gone. */
const deleted = 'DELETED'

export const transitions = {
  /** uploading a version string that already exists replaces its files and starts it over */
  upload: { DRAFT: 'DRAFT', IN_REVIEW: 'DRAFT' },
  review: { DRAFT: 'IN_REVIEW', IN_REVIEW: 'IN_REVIEW' },
  /** a published version may be released into another channel; the channel refuses a second release of it */
  publish: { DRAFT: 'PUBLISHED', IN_REVIEW: 'PUBLISHED', PUBLISHED: 'PUBLISHED' },
  /** the target of a rollback: statuses do not change, only the release pointer moves */
  rollback: { PUBLISHED: 'PUBLISHED' },
  delete: { DRAFT: deleted, IN_REVIEW: deleted },
} as const satisfies Record<string, Partial<Record<VersionStatus, VersionStatus | typeof deleted>>>

export type VersionAction = keyof typeof transitions

/** The answer when the table has no entry: all are 409 (a conflict with the version's state). */
export const refusals: Record<VersionAction, { code: string; message: (version: string, status: VersionStatus) => string }> = {
  upload: { code: 'VERSION_ALREADY_PUBLISHED', message: (v) => `Version ${v} is already published and cannot be replaced; upload a new version number` },
  review: { code: 'VERSION_ALREADY_PUBLISHED', message: (v) => `Version ${v} is already published; there is nothing to review` },
  publish: { code: 'VERSION_ALREADY_PUBLISHED', message: (v) => `Version ${v} is already published; roll back to it instead` },
  rollback: { code: 'VERSION_NOT_PUBLISHED', message: (v, s) => `Version ${v} is ${s}; only a published version can be rolled back to` },
  delete: { code: 'VERSION_PUBLISHED', message: (v) => `Version ${v} has been published and is kept for rollback; it cannot be deleted` },
}

/** The status `action` moves a version in `status` to, or null when the table forbids it. */
export function nextStatus(action: VersionAction, status: VersionStatus): VersionStatus | typeof deleted | null {
  const row: Partial<Record<VersionStatus, VersionStatus | typeof deleted>> = transitions[action]
  return row[status] ?? null
}

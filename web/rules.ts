// Pure rules the pages apply: which lifecycle buttons a version gets, and how install URLs resolve.
import type { MiniApp, Version } from './api.ts'

export interface AllowedActions {
  review: boolean
  publish: boolean
  rollback: boolean
  remove: boolean
}

/** The version lifecycle of decisions.md §5, as buttons: shown only where the server would accept. */
export function allowedActions(version: Pick<Version, 'id' | 'status'>, miniApp: Pick<MiniApp, 'currentReviewVersionId' | 'currentReleaseVersionId'>): AllowedActions {
  const unpublished = version.status === 'DRAFT' || version.status === 'IN_REVIEW'
  return {
    // re-submitting the version that already is the review version would change nothing
    review: unpublished && miniApp.currentReviewVersionId !== version.id,
    publish: unpublished,
    rollback: version.status === 'PUBLISHED' && miniApp.currentReleaseVersionId !== version.id,
    remove: version.status !== 'PUBLISHED' && miniApp.currentReleaseVersionId !== version.id,
  }
}

/**
 * Install URLs follow the runtime's resolution rules: an absolute path joins this origin,
 * a full URL stays as it is, and a relative path joins the API root `/api/`.
 */
export function absoluteInstallUrl(installUrl: string, origin: string): string {
  if (installUrl.startsWith('/')) return origin + installUrl
  if (/^[a-z][a-z0-9+.-]*:/i.test(installUrl)) return installUrl
  return `${origin}/api/${installUrl}`
}

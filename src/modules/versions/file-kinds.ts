// The five files a version may have, and what each is answered as.

/** The five files of a version, with what they are answered as. */
export const fileKinds = {
  bundleIos: { contentType: 'application/javascript', fileName: 'main.ios.jsbundle' },
  bundleAndroid: { contentType: 'application/javascript', fileName: 'main.android.bundle' },
  manifest: { contentType: 'application/json', fileName: 'app.json' },
  assetsIos: { contentType: 'application/zip', fileName: 'assets-ios.zip' },
  assetsAndroid: { contentType: 'application/zip', fileName: 'assets-android.zip' },
} as const

export type FileKind = keyof typeof fileKinds

export const fileKindNames = Object.keys(fileKinds) as FileKind[]

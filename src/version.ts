// The product version, taken from package.json at build time.
import packageJson from '../package.json' with { type: 'json' }

export const productVersion: string = packageJson.version

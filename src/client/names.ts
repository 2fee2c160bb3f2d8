// The developer's command names, apart from their code: main.ts reads them to load only the client side for these.
export const clientCommandNames = ['login', 'logout', 'whoami', 'push', 'apps', 'versions', 'publish', 'rollback', 'rollout', 'status']

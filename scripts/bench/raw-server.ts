// The raw baseline of ab.ts and split.ts, in a process of its own (one JS thread, like serve): Bun.serve
// answering the JSON file named on the command line as a constant; prints its port. runtime.ts's is the same answer.
const json = await Bun.file(process.argv[2]!).text()
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8' } }) })
console.log(server.port)
await new Promise(() => {})
export {}

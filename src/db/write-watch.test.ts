import { expect, test } from 'bun:test'
import { createChangeCheck, createWriteWatch, watchingWrites } from './write-watch'

test('reads are not counted; a writing request is counted while it runs and bumps the epoch when it ends', async () => {
  const watch = createWriteWatch()
  let release!: () => void
  const handle = watchingWrites((request) => (request.method === 'POST' ? new Promise<Response>((resolve) => (release = () => resolve(new Response('ok')))) : Promise.resolve(new Response('read'))), watch)
  await handle(new Request('http://x/', { method: 'GET' }))
  expect(watch).toEqual({ inFlight: 0, epoch: 0 })
  const writing = handle(new Request('http://x/', { method: 'POST' }))
  expect(watch).toEqual({ inFlight: 1, epoch: 0 })
  release()
  await writing
  expect(watch).toEqual({ inFlight: 0, epoch: 1 })
})

test('a writing request that fails, synchronously or not, still ends', async () => {
  const watch = createWriteWatch()
  const rejecting = watchingWrites(() => Promise.reject(new Error('boom')), watch)
  expect(rejecting(new Request('http://x/', { method: 'DELETE' }))).rejects.toThrow('boom')
  await Bun.sleep(0)
  expect(watch).toEqual({ inFlight: 0, epoch: 1 })
  const throwing = watchingWrites(() => {
    throw new Error('sync')
  }, watch)
  expect(() => throwing(new Request('http://x/', { method: 'PATCH' }))).toThrow('sync')
  expect(watch).toEqual({ inFlight: 0, epoch: 2 })
})

test('the change check asks while a write runs, once after it ended, then not again until the age limit', async () => {
  const watch = createWriteWatch()
  const mayHaveChanged = createChangeCheck(watch, 50)
  expect(mayHaveChanged()).toBe(true) // the first time
  expect(mayHaveChanged()).toBe(false)
  watch.inFlight++
  expect(mayHaveChanged()).toBe(true)
  expect(mayHaveChanged()).toBe(true)
  watch.inFlight--
  watch.epoch++
  expect(mayHaveChanged()).toBe(true)
  expect(mayHaveChanged()).toBe(false)
  await Bun.sleep(60)
  expect(mayHaveChanged()).toBe(true)
  expect(mayHaveChanged()).toBe(false)
})

test('without a watch every lookup asks', () => {
  const mayHaveChanged = createChangeCheck(undefined)
  expect(mayHaveChanged()).toBe(true)
  expect(mayHaveChanged()).toBe(true)
})

/**
 * The SSRF guard on its own: which addresses a webhook may target, URLs as stored, names checked
 * after resolution at creation and at each attempt (with a stand-in resolver: no network).
 */
import { describe, expect, test } from 'bun:test'
import { createWebhookGuard, parseWebhookUrl, refusedAddress, TargetRefused } from '../../src/alerts/ssrf'

describe('refusedAddress', () => {
  test('private, loopback, link-local and every other special range are refused; public unicast passes', () => {
    for (const address of [
      '127.0.0.1',
      '127.255.0.9',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '192.0.2.10',
      '198.18.0.1',
      '240.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fe80::1%eth0',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '::127.0.0.1',
      '64:ff9b::a00:1',
      '2002:7f00:1::',
      '2001:db8::1',
    ]) {
      expect({ address, refused: refusedAddress(address) }).toEqual({ address, refused: expect.stringContaining(address) })
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '192.169.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) {
      expect({ address, refused: refusedAddress(address) }).toEqual({ address, refused: null })
    }
    expect(refusedAddress('127.0.0.1')).toBe('127.0.0.1 is a loopback address')
    expect(refusedAddress('169.254.1.1')).toBe('169.254.1.1 is a link-local address')
    expect(refusedAddress('not an address')).toBe('not an address is not an IP address')
  })
})

describe('parseWebhookUrl', () => {
  test('absolute http(s) with a host and no credentials, at most 2048 characters', () => {
    expect(parseWebhookUrl('https://hooks.example.com/fleet?x=1').href).toBe('https://hooks.example.com/fleet?x=1')
    expect(parseWebhookUrl('HTTP://Hooks.Example.com').href).toBe('http://hooks.example.com/')
    for (const bad of ['ftp://x.example.com/', 'file:///etc/passwd', 'javascript:alert(1)', '//hooks.example.com', 'hooks.example.com', 'https://u:p@hooks.example.com/', 'https://u@hooks.example.com/', `https://h.example.com/${'a'.repeat(2048)}`]) {
      expect(() => parseWebhookUrl(bad)).toThrow(TargetRefused)
    }
  })
})

describe('checkNew (creation)', () => {
  const guardResolving = (answers: Record<string, string[] | Error>) =>
    createWebhookGuard({
      allowPrivate: false,
      resolve: async (name) => {
        const answer = answers[name]
        if (answer === undefined || answer instanceof Error) throw answer ?? Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
        return answer
      },
    })

  test('a name that resolves to loopback, or to any private address among public ones, is refused', async () => {
    const guard = guardResolving({ 'loop.example': ['127.0.0.1'], 'mixed.example': ['93.184.216.34', '10.0.0.7'], 'v6.example': ['::1'], 'ok.example': ['93.184.216.34'] })
    await expect(guard.checkNew('https://loop.example/hook')).rejects.toThrow('127.0.0.1 is a loopback address')
    await expect(guard.checkNew('https://mixed.example/hook')).rejects.toThrow('10.0.0.7 is a private address')
    await expect(guard.checkNew('http://v6.example/hook')).rejects.toThrow('::1 is a loopback address')
    expect(await guard.checkNew('https://ok.example/hook')).toBe('https://ok.example/hook')
    // offline, or not yet in DNS: accepted now, checked at each attempt
    expect(await guard.checkNew('https://unknown.example/hook')).toBe('https://unknown.example/hook')
  })

  test('localhost names are refused without asking DNS; literal addresses are judged as they are', async () => {
    const guard = guardResolving({})
    for (const url of ['http://localhost/', 'http://LOCALHOST.:8080/', 'https://a.b.localhost/', 'http://[::ffff:7f00:1]/', 'http://017700000001/', 'http://0x7f.1/']) {
      await expect(guard.checkNew(url)).rejects.toThrow(TargetRefused)
    }
    expect(await guard.checkNew('http://93.184.216.34:8080/in')).toBe('http://93.184.216.34:8080/in')
  })

  test('WEBHOOK_ALLOW_PRIVATE lets private targets through, never other schemes', async () => {
    const guard = createWebhookGuard({ allowPrivate: true, resolve: async () => ['127.0.0.1'] })
    expect(await guard.checkNew('http://localhost:8080/hook')).toBe('http://localhost:8080/hook')
    expect(await guard.checkNew('http://10.0.0.1/hook')).toBe('http://10.0.0.1/hook')
    await expect(guard.checkNew('ftp://10.0.0.1/')).rejects.toThrow(TargetRefused)
  })
})

describe('target (each attempt)', () => {
  test('http is pinned to the checked address with the Host header; https connects by name; a name that does not resolve is refused', async () => {
    const guard = createWebhookGuard({
      allowPrivate: false,
      resolve: async (name) => {
        if (name === 'v4.example') return ['93.184.216.34', '93.184.216.35']
        if (name === 'v6.example') return ['2606:4700::1111']
        throw Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' })
      },
    })
    expect(await guard.target('http://v4.example:8080/in?x=1')).toEqual({ url: 'http://93.184.216.34:8080/in?x=1', host: 'v4.example:8080' })
    expect(await guard.target('http://v6.example/in')).toEqual({ url: 'http://[2606:4700::1111]/in', host: 'v6.example' })
    expect(await guard.target('https://v4.example/in')).toEqual({ url: 'https://v4.example/in', host: null })
    expect(await guard.target('http://93.184.216.34/in')).toEqual({ url: 'http://93.184.216.34/in', host: null })
    await expect(guard.target('https://gone.example/in')).rejects.toThrow('gone.example does not resolve (ENOTFOUND)')
    await expect(guard.target('http://127.0.0.1/in')).rejects.toThrow(TargetRefused)
  })

  test('an attempt cut short while resolving ends with the signal', async () => {
    const guard = createWebhookGuard({ allowPrivate: false, resolve: () => new Promise(() => {}) })
    const stop = new AbortController()
    const pending = guard.target('http://slow.example/in', stop.signal)
    stop.abort(new Error('stopped'))
    await expect(pending).rejects.toThrow('stopped')
  })

  test('with WEBHOOK_ALLOW_PRIVATE nothing is resolved or rewritten', async () => {
    const guard = createWebhookGuard({ allowPrivate: true, resolve: () => Promise.reject(new Error('must not be asked')) })
    expect(await guard.target('http://receiver.lan:9000/hook')).toEqual({ url: 'http://receiver.lan:9000/hook', host: null })
  })
})

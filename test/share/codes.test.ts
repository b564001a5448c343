/**
 * Short codes as the access log must know them wherever they stand (ops/requests.ts): 10 base62
 * characters mixing at least two of lower case, upper case and digits. Before, about one draw in
 * 5,000 was of one class alone (a run log showed `/devices/hsydjnoypy` unredacted).
 */
import { expect, test } from 'bun:test'
import { redactUrl } from '../../src/ops/requests'
import { generateShortCode, SHORT_CODE } from '../../src/share/tokens'

test('50,000 short codes: each a short code, each mixing classes, each cut from a mangled URL in the log', () => {
  const singleClass: string[] = []
  for (let k = 0; k < 50_000; k++) {
    const code = generateShortCode()
    expect(SHORT_CODE.test(code)).toBe(true)
    if (/^(?:[a-z]+|[A-Z]+|[0-9]+)$/.test(code)) singleClass.push(code)
    if (k % 1000 === 0) expect(redactUrl(`http://h/devices/${code}`)).toBe('/devices/[redacted]')
  }
  // one class alone happens about 9 times in 50,000 draws of plain base62
  expect(singleClass).toEqual([])
})

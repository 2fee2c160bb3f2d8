// Babel as a React Native app's Metro runs it: @react-native/babel-preset over the bundled library. argv: in out
const { transformFileSync } = require('@babel/core')
const { writeFileSync } = require('node:fs')
const [input, output] = process.argv.slice(2)
const result = transformFileSync(input, {
  babelrc: false,
  configFile: false,
  cwd: __dirname,
  sourceType: 'module',
  presets: [[require.resolve('@react-native/babel-preset'), { enableBabelRuntime: true }]],
})
writeFileSync(output, result.code)

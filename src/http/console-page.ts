// The bundled console page (web/index.html), in a module of its own: `serve` imports it with
// import(), so that in the split binary the chunk that holds it holds nothing else (see scripts/build.ts).
import consolePage from '../../web/index.html'

export default consolePage

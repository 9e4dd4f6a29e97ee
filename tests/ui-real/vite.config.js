// Builds the page of real ui-lib components (see src/main.jsx) into dist/.
// Nothing here reaches the network: every module comes from node_modules.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const uiLibCjs = fileURLToPath(
  new URL('./node_modules/@openshift-assisted/ui-lib/build/cjs/', import.meta.url),
);

export default defineConfig({
  plugins: [react()],
  // Served by the test's own loopback server from its root path.
  base: '/',
  resolve: {
    alias: {
      // HostProgress is not in the package's exports map; reach the very file
      // HostStatus itself requires.
      'ui-lib/HostProgress': `${uiLibCjs}common/components/hosts/HostProgress.js`,
    },
  },
  define: {
    // ui-lib's useTranslation wrapper passes this namespace to react-i18next
    // (upstream's apps define it at build time too).
    'process.env.TRANSLATION_NAMESPACE': JSON.stringify('translation'),
    'process.env.AIUI_APP_VERSION': JSON.stringify('ui-real-test'),
    'process.env.AIUI_APP_CLUSTER_PERMISSIONS': 'undefined',
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 8192,
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});

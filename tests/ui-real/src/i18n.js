// i18next as upstream's apps/assisted-ui/src/i18n.ts sets it up: the
// English catalogue of @openshift-assisted/locales, keys like "ai:Installing"
// (so "~" separates namespaces and keys are not split on dots).
import i18n from 'i18next';
import { initReactI18next } from 'react-i18next';
import translation from '@openshift-assisted/locales/en/translation.json';

void i18n.use(initReactI18next).init({
  lng: 'en',
  resources: { en: { translation } },
  supportedLngs: ['en'],
  fallbackLng: 'en',
  load: 'languageOnly',
  defaultNS: 'translation',
  nsSeparator: '~',
  keySeparator: false,
  interpolation: { escapeValue: false },
  react: { useSuspense: false, transSupportBasicHtmlNodes: true },
});

export default i18n;

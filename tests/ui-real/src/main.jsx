// One page of the real assisted UI: for every host of the infra-envs the
// test server lists in /sections.json, ui-lib's own hosts-table status cell
// (`statusColumn`, i.e. HostStatus with its popover) and HostProgress, fed
// by ui-lib's own API client (InfraEnvsAPI.getHosts, i.e.
// GET /api/assisted-install/v2/infra-envs/{id}/hosts with its
// snake_case -> camelCase conversion). Nothing here interprets the hosts.
import './i18n';
import React from 'react';
import { createRoot } from 'react-dom/client';
import '@patternfly/react-core/dist/styles/base.css';
import { InfraEnvsAPI, statusColumn } from '@openshift-assisted/ui-lib/common';
import HostProgress from 'ui-lib/HostProgress';
import { useTranslation } from 'react-i18next';

const cellStyle = { padding: '6px 12px', verticalAlign: 'middle', borderBottom: '1px solid #d2d2d2' };

function HostRow({ host, t }) {
  // The cell exactly as ui-lib's hosts table builds it (cluster installing).
  const status = statusColumn(t, 'installing').cell(host);
  return (
    <tr data-host-id={host.id} data-hostname={host.requestedHostname}>
      <td style={cellStyle}>{host.requestedHostname}</td>
      <td style={cellStyle}>
        {host.role}
        {host.bootstrap ? ' (bootstrap)' : ''}
      </td>
      <td style={{ ...cellStyle, minWidth: '14rem' }} {...status.props}>
        {status.title}
      </td>
      <td style={{ ...cellStyle, width: '55%' }} data-testid="host-progress">
        <HostProgress host={host} />
      </td>
    </tr>
  );
}

function Section({ section, hosts, t }) {
  return (
    <section
      data-section={section.key}
      // The progress-info section gets room above it: the screenshot shows
      // a HostStatus popover opened there, which opens upwards.
      style={{ marginBottom: '24px', marginTop: section.key === 'progress-info' ? '200px' : 0 }}
    >
      <h2 style={{ fontSize: '18px', fontWeight: 600, margin: '12px 0 6px' }}>{section.title}</h2>
      <table style={{ borderCollapse: 'collapse', width: '100%' }}>
        <thead>
          <tr style={{ textAlign: 'left' }}>
            <th style={cellStyle}>Host</th>
            <th style={cellStyle}>Role</th>
            <th style={cellStyle}>Status (ui-lib HostStatus)</th>
            <th style={cellStyle}>Progress (ui-lib HostProgress)</th>
          </tr>
        </thead>
        <tbody>
          {hosts.map((h) => (
            <HostRow key={h.id} host={h} t={t} />
          ))}
        </tbody>
      </table>
    </section>
  );
}

function App() {
  const { t } = useTranslation('translation');
  const [page, setPage] = React.useState(null);
  const [error, setError] = React.useState(null);

  React.useEffect(() => {
    (async () => {
      const config = await (await fetch('/sections.json')).json();
      const loaded = [];
      for (const section of config.sections) {
        const { data } = await InfraEnvsAPI.getHosts(section.infraEnvId);
        loaded.push({ section, hosts: data });
      }
      setPage({ title: config.title, loaded });
    })().catch((e) => setError(String(e && e.stack ? e.stack : e)));
  }, []);

  React.useEffect(() => {
    if (page) document.documentElement.dataset.ready = 'true';
    if (error) document.documentElement.dataset.error = error;
  }, [page, error]);

  if (error) return <pre id="load-error">{error}</pre>;
  if (!page) return <p>Loading…</p>;
  return (
    <main style={{ padding: '16px 24px' }}>
      <h1 style={{ fontSize: '22px', fontWeight: 600 }}>{page.title}</h1>
      {page.loaded.map(({ section, hosts }) => (
        <Section key={section.key} section={section} hosts={hosts} t={t} />
      ))}
    </main>
  );
}

createRoot(document.getElementById('root')).render(<App />);

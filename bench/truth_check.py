#!/usr/bin/env python3
"""Checks a campaign directory (after `p2pscope analyze DIR`) against the measurement-truth
goals: 0 causality violations, GPU<->host offset bound <= 1 us, CV < 5 % at every size,
medians monotone (no size more than 3 % below a smaller size), model worst error <= 10 %.
Prints one table per link and a verdict line per goal. Usage: truth_check.py DIR [LABEL]"""
import csv, json, sys, os

d = sys.argv[1]
label = sys.argv[2] if len(sys.argv) > 2 else os.path.basename(d.rstrip('/'))
drift = json.load(open(os.path.join(d, 'clock_drift.json')))
links = json.load(open(os.path.join(d, 'links.json')))['links']
rows = list(csv.DictReader(open(os.path.join(d, 'summary.csv'))))
meta = json.load(open(os.path.join(d, 'metadata.json')))

a = drift.get('alignment', {})
print(f"## {label}")
print(f"timing: {meta.get('timing', {}).get('method')}, min sample "
      f"{meta.get('timing', {}).get('min_sample_ns', 0) / 1e3:.0f} us; "
      f"measurement phase {sum(s.get('measure_phase_s', 0) + s.get('warmup_phase_s', 0) for s in meta['sessions']):.1f} s")
for dev in drift.get('devices', []):
    one = dev.get('one_line_fit') or {}
    cm = dev.get('clock_map') or {}
    c = dev.get('causality') or {}
    print(f"GPU {dev['device']}: sync {dev.get('sync_method', '?')}; timer step {one.get('timer_step_ns')} ns; "
          f"tightest bracket {one.get('min_bracket_ns')} ns; one line over the run: ppm {one.get('ppm', 0):+.3f}, "
          f"{'bounded' if one.get('bounded') else 'does not fit (off by %.0f ns)' % one.get('inconsistency_ns', 0)}; "
          f"clock map: {cm.get('pieces')} pieces ({cm.get('sync_bursts_during_run')} bursts during the run), offset bound "
          f"+-{c.get('offset_uncertainty_ns', float('nan')):.0f} ns (sync alone +-{c.get('offset_uncertainty_from_sync_ns', float('nan')):.0f}); "
          f"causality {c.get('violations')} of {c.get('ops_checked')} ops violate, worst {c.get('worst_violation_ns', 0):.0f} ns; "
          f"least slack start {c.get('min_start_slack_ns') or 0:.0f} ns, end {c.get('min_end_slack_ns') or 0:.0f} ns")
    if 'ppm_change' in dev: print(f"  drift rate changed by {dev['ppm_change']:.3f} ppm between the start and end windows")
ok = {}
ok['causality'] = a.get('causality_violations', 1) == 0 and a.get('ops_checked', 0) > 0
unc = a.get('offset_uncertainty_ns_max')
ok['offset <= 1 us'] = unc is not None and unc <= 1000
worst_cv, worst_model, mono_bad = 0, 0, []
for L in links:
    key = (L['backend'], str(L['src']), str(L['dst']))
    cv = {int(r['size_bytes']): float(r['cv']) for r in rows if (r['backend'], r['src'], r['dst']) == key}
    print(f"\n{L['backend']} {L['src']}->{L['dst']} ({L['link_class']}), model {L['model']}: "
          f"alpha {L['alpha_beta']['alpha_ns']:.0f} ns, beta {L['alpha_beta']['beta_bytes_per_s'] / 1e9:.2f} GB/s")
    print(f"{'size':>10} {'median':>12} {'GB/s':>8} {'CV':>7} {'model err':>9}")
    best_before = 0
    for p in L['points']:
        n = int(p['size_bytes']); m = p['median_ns']
        err = p.get('rel_error')
        flag = ''
        if best_before and m < best_before * 0.97:
            mono_bad.append(f"{key[1]}->{key[2]} {n} B: {m:.0f} ns < {best_before:.0f} ns at a smaller size")
            flag = ' <- below a smaller size'
        best_before = max(best_before, m)
        worst_cv = max(worst_cv, cv.get(n, 0))
        if err is not None: worst_model = max(worst_model, abs(err))
        print(f"{n:>10} {m / 1e3:>10.3f}us {n / m:>8.2f} {100 * cv.get(n, 0):>6.2f}% "
              f"{'' if err is None else f'{100 * err:+.1f}%':>9}{flag}")
ok['CV < 5 % at every size'] = worst_cv < 0.05
ok['medians monotone (3 %)'] = not mono_bad
ok['model worst error <= 10 %'] = worst_model <= 0.10
print()
for m in mono_bad: print('not monotone:', m)
med = a.get('offset_uncertainty_ns_median')
print(f"worst CV {100 * worst_cv:.2f} %, worst model error {100 * worst_model:.1f} %, offset bound "
      f"+-{unc if unc is not None else float('nan'):.0f} ns (median op +-{med if med is not None else float('nan'):.0f}), violations {a.get('causality_violations')} of {a.get('ops_checked')}")
for k, v in ok.items(): print(f"{'PASS' if v else 'FAIL'}: {k}")

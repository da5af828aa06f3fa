#!/bin/sh
# The confirm study of issue 39: every paper spec run under its sequential plan on fresh
# seeds (300 on), from a clean checkout, cheapest first, one folder at a time. Each run
# resumes where it stopped; the recorded pilot of each folder stays in the git history.
# Run from the repository root of a clean checkout (a git worktree is fine):
#   sh experiments/confirm_study.sh [NAME...]      # default: every paper spec, in this order
set -e
ORDER="as_lsvrg_fig6 as_lsvrg_fig7 as_lsvrg_fig4 as_lsvrg_fig3 as_lsvrg_fig2 as_lsvrg_fig1
as_lsvrg_fig5 omd_tch_vlmop2 zo_smd_e1 zo_smd_e2 svrb_fig1_digits gdro_synthetic
mero_synthetic mero_fashion_mnist gdro_fashion_mnist svrb_fig1_fashion re_rsvrb_fig2_digits
omd_tch_fl_cifar10 omd_tch_fl_mnist"
for name in ${*:-$ORDER}; do
  echo "== $name $(date -u +%FT%TZ) load $(cut -d' ' -f1 /proc/loadavg)"
  drocli run "experiments/$name.yaml" --until-decided -j 2 -q --out "results/$name"
  drocli plot "results/$name" >/dev/null
  drocli check "results/$name" --plan || true
  echo "== $name done $(date -u +%FT%TZ)"
done

/*
 * The backends built in, one line each, in the order `MARCEL_HWPRIO=auto` tries them:
 * MA_HW_BACKEND(identifier), where the backend's table is ma_hw_<identifier>
 * (hwprio/registry.c makes the list from it). Adding a backend: its file, its name in
 * Makefile.am, a line here.
 */
MA_HW_BACKEND(none)
MA_HW_BACKEND(resctrl_cat)
MA_HW_BACKEND(resctrl_mba)
MA_HW_BACKEND(power_ppr)
MA_HW_BACKEND(smt_quiet)
MA_HW_BACKEND(cpukind)
MA_HW_BACKEND(uclamp)
MA_HW_BACKEND(cpufreq)

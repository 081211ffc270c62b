/**
 * @file marcel/vpset.h
 * @brief Sets of workers (VPs), used to restrict where a thread may run.
 */
#ifndef MARCEL_VPSET_H
#define MARCEL_VPSET_H

#include <marcel/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_vpset VP sets
 * A set of VP numbers `0 .. MARCEL_NBMAXVPS - 1`, passed by value.
 * @{ */

/** Number of machine words in a ::marcel_vpset_t. */
#define MA_VPSET_WORDS (MARCEL_NBMAXVPS / (8 * sizeof(unsigned long)))

/** A set of VPs. Copy it freely; the helpers below never allocate. */
typedef struct {
	unsigned long bits[MA_VPSET_WORDS]; /**< One bit per VP. */
} marcel_vpset_t;

/** Returns the empty set. */
static inline marcel_vpset_t marcel_vpset_none(void)
{
	marcel_vpset_t s = { { 0 } };
	return s;
}

/** Returns the set holding only VP @p vp (empty if @p vp is out of range). */
static inline marcel_vpset_t marcel_vpset_vp(unsigned vp)
{
	marcel_vpset_t s = { { 0 } };
	if (vp < MARCEL_NBMAXVPS)
		s.bits[vp / (8 * sizeof(unsigned long))] = 1UL << (vp % (8 * sizeof(unsigned long)));
	return s;
}

/** Returns the set of all VPs. */
static inline marcel_vpset_t marcel_vpset_full(void)
{
	marcel_vpset_t s;
	for (size_t i = 0; i < MA_VPSET_WORDS; i++)
		s.bits[i] = ~0UL;
	return s;
}

/** The set holding only VP @p n (an expression of type ::marcel_vpset_t). */
#define MARCEL_VPSET_VP(n) marcel_vpset_vp(n)
/** The set of all VPs. */
#define MARCEL_VPSET_FULL marcel_vpset_full()
/** The empty set. */
#define MARCEL_VPSET_ZERO marcel_vpset_none()

/** Empties @p set. */
static inline void marcel_vpset_zero(marcel_vpset_t *set)
{
	*set = marcel_vpset_none();
}

/** Fills @p set with every VP. */
static inline void marcel_vpset_fill(marcel_vpset_t *set)
{
	*set = marcel_vpset_full();
}

/** Adds VP @p vp to @p set (ignored if out of range). */
static inline void marcel_vpset_set(marcel_vpset_t *set, unsigned vp)
{
	if (vp < MARCEL_NBMAXVPS)
		set->bits[vp / (8 * sizeof(unsigned long))] |= 1UL << (vp % (8 * sizeof(unsigned long)));
}

/** Removes VP @p vp from @p set (ignored if out of range). */
static inline void marcel_vpset_clr(marcel_vpset_t *set, unsigned vp)
{
	if (vp < MARCEL_NBMAXVPS)
		set->bits[vp / (8 * sizeof(unsigned long))] &= ~(1UL << (vp % (8 * sizeof(unsigned long))));
}

/** Returns non-zero if VP @p vp is in @p set. */
static inline int marcel_vpset_isset(const marcel_vpset_t *set, unsigned vp)
{
	if (vp >= MARCEL_NBMAXVPS)
		return 0;
	return (set->bits[vp / (8 * sizeof(unsigned long))] >> (vp % (8 * sizeof(unsigned long)))) & 1;
}

/** Returns non-zero if @p set is empty. */
static inline int marcel_vpset_iszero(const marcel_vpset_t *set)
{
	for (size_t i = 0; i < MA_VPSET_WORDS; i++)
		if (set->bits[i])
			return 0;
	return 1;
}

/** Returns the number of VPs in @p set. */
static inline unsigned marcel_vpset_weight(const marcel_vpset_t *set)
{
	unsigned n = 0;
	for (size_t i = 0; i < MA_VPSET_WORDS; i++)
		n += (unsigned)__builtin_popcountl(set->bits[i]);
	return n;
}

/** Returns the lowest VP in @p set, or -1 if it is empty. */
static inline int marcel_vpset_first(const marcel_vpset_t *set)
{
	for (size_t i = 0; i < MA_VPSET_WORDS; i++)
		if (set->bits[i])
			return (int)(i * 8 * sizeof(unsigned long)) + __builtin_ctzl(set->bits[i]);
	return -1;
}

/** Returns the highest VP in @p set, or -1 if it is empty. */
static inline int marcel_vpset_last(const marcel_vpset_t *set)
{
	for (size_t i = MA_VPSET_WORDS; i-- > 0;)
		if (set->bits[i])
			return (int)(i * 8 * sizeof(unsigned long)) + (int)(8 * sizeof(unsigned long)) - 1 -
			       __builtin_clzl(set->bits[i]);
	return -1;
}

/** @} */

#ifdef __cplusplus
}
#endif

#endif

//! The timed accesses of `sweep`, with what they feed (the sum a load adds to, the value a
//! store writes) and the pointer or index they advance, as `asm!` blocks on x86_64, aarch64
//! and 32-bit ARM: a pass of UNROLL accesses written out (`.irp`) is one block, a single
//! access (the rest of a sweep, the memcpy loops) another.
//!
//! Why: LLVM's machine outliner, which it runs by itself at opt-level "z" on AArch64 (the
//! board binaries' level), replaces instruction sequences that repeat across the program with
//! calls to one shared copy (`OUTLINED_FUNCTION_*`). Left as Rust, the written-out passes
//! repeat the same few instructions sixteen times: a build with the outliner on put 41 such
//! calls in the 128-bit store loop alone, and with only the accesses in `asm!` it still moved
//! the two counter updates of four store loops into a call, once per pass. LLVM never outlines
//! inline assembly
//! (`TargetInstrInfo::getOutliningType` marks it illegal), and what is left of each loop
//! around a block is its compare and branch, which it cannot move either (one instruction
//! before a branch is never worth a call). So the timed loops hold accesses, not calls and
//! returns, in every profile and whatever the outliner does to the code around them.
//!
//! Each access is exactly one instruction of the width asked (`ldrd`/`strd` for 64 bits on
//! 32-bit ARM, as the compiler emits for a volatile u64 there). Other architectures run the
//! same accesses through `ptr::read_volatile`/`write_volatile`.

/// Accesses per pass of the written-out loops (the `.irp` lists below have UNROLL entries).
pub(crate) const UNROLL: usize = 16;

/// An element width of the 8- to 64-bit loops.
pub(crate) trait Elem: Copy {
    /// Adds the UNROLL elements from `p` to `sum` (one load of the element's width each) and
    /// advances `p` past them.
    ///
    /// # Safety
    /// `p..p + UNROLL` is mapped, readable and aligned to the element.
    unsafe fn load_pass(p: &mut *const Self, sum: &mut u64);

    /// Adds the element at `p` to `sum` and advances `p` by one.
    ///
    /// # Safety
    /// `p` is mapped, readable and aligned to the element.
    unsafe fn load_one(p: &mut *const Self, sum: &mut u64);

    /// Stores `i + k`, truncated to the element, at element `i + k` of `base` for k in
    /// 0..UNROLL, and advances `i` by UNROLL.
    ///
    /// # Safety
    /// `base + i .. base + i + UNROLL` is mapped, writable and aligned to the element.
    unsafe fn store_pass(base: *mut Self, i: &mut usize);

    /// Stores `i`, truncated, at element `i` of `base` and advances `i` by one.
    ///
    /// # Safety
    /// `base + i` is mapped, writable and aligned to the element.
    unsafe fn store_one(base: *mut Self, i: &mut usize);
}

/// The loads and stores of one `Elem`. x86_64 and aarch64 load a pass as four groups of four
/// elements in order (`.irp` over the group's first element `\k`), each group summed in a small
/// tree before it is added to `{s}`, as LLVM sums an unrolled loop of wrapping adds: one chain
/// of sixteen adds through `{s}` ran 8-bit loads at half the rate of the compiler's tree
/// (x86_64 `bench mem`). `$ins`/`$reg`/`$ptr` are the load instruction, the register modifier
/// and (x86) the memory operand's size; `$size` the element's bytes. Stores are independent
/// of each other: `$x86_store`/`$a64_store`/`$arm_store` is one store at element `\k` (0..UNROLL
/// in a pass, 0 alone). 32-bit ARM sums in one chain (`$arm_load`, one element at `\k`; the
/// 64-bit sum in `{lo}`/`{hi}`) and uses r2, r3 (ldrd/strd's even/odd pair) and r12.
macro_rules! elem {
    (@irp16) => {
        ".irp k,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"
    };
    (@load_pass $t:ty, $p:ident, $sum:ident, $size:literal, $x86:tt, $a64:tt, $arm:literal) => {{
        elem!(@x86_pass $p, $sum, $size, $x86);
        elem!(@a64_pass $p, $sum, $size, $a64);
        elem!(@arm $t, $p, $sum, elem!(@irp16), UNROLL, $arm);
        elem!(@other $t, $p, $sum, UNROLL);
    }};
    (@load_one $t:ty, $p:ident, $sum:ident, $size:literal, $x86:tt, $a64:tt, $arm:literal) => {{
        elem!(@x86_one $p, $sum, $size, $x86);
        elem!(@a64_one $p, $sum, $size, $a64);
        elem!(@arm $t, $p, $sum, ".irp k,0", 1, $arm);
        elem!(@other $t, $p, $sum, 1);
    }};
    (@x86_pass $p:ident, $sum:ident, $size:literal, ($ins:literal, $reg:literal, $ptr:literal)) => {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!(
            ".irp k,0,4,8,12",
            concat!($ins, " {t0", $reg, "}, ", $ptr, " ptr [{p}+", $size, "*\\k]"),
            concat!($ins, " {t1", $reg, "}, ", $ptr, " ptr [{p}+", $size, "*\\k+", $size, "]"),
            concat!($ins, " {t2", $reg, "}, ", $ptr, " ptr [{p}+", $size, "*\\k+2*", $size, "]"),
            concat!($ins, " {t3", $reg, "}, ", $ptr, " ptr [{p}+", $size, "*\\k+3*", $size, "]"),
            "add {t0}, {t1}", "add {t2}, {t3}", "add {t0}, {t2}", "add {s}, {t0}",
            ".endr",
            "add {p}, {step}",
            p = inout(reg) *$p, s = inout(reg) *$sum, t0 = out(reg) _, t1 = out(reg) _,
            t2 = out(reg) _, t3 = out(reg) _, step = const UNROLL * $size,
            options(nostack, readonly));
    };
    (@x86_one $p:ident, $sum:ident, $size:literal, ($ins:literal, $reg:literal, $ptr:literal)) => {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!(
            concat!($ins, " {t0", $reg, "}, ", $ptr, " ptr [{p}]"),
            "add {s}, {t0}",
            concat!("add {p}, ", $size),
            p = inout(reg) *$p, s = inout(reg) *$sum, t0 = out(reg) _,
            options(nostack, readonly));
    };
    (@a64_pass $p:ident, $sum:ident, $size:literal, ($ins:literal, $reg:literal)) => {
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!(
            ".irp k,0,4,8,12",
            concat!($ins, " {t0", $reg, "}, [{p}, #", $size, "*\\k]"),
            concat!($ins, " {t1", $reg, "}, [{p}, #", $size, "*\\k+", $size, "]"),
            concat!($ins, " {t2", $reg, "}, [{p}, #", $size, "*\\k+2*", $size, "]"),
            concat!($ins, " {t3", $reg, "}, [{p}, #", $size, "*\\k+3*", $size, "]"),
            "add {t0}, {t0}, {t1}", "add {t2}, {t2}, {t3}", "add {t0}, {t0}, {t2}",
            "add {s}, {s}, {t0}",
            ".endr",
            "add {p}, {p}, #{step}",
            p = inout(reg) *$p, s = inout(reg) *$sum, t0 = out(reg) _, t1 = out(reg) _,
            t2 = out(reg) _, t3 = out(reg) _, step = const UNROLL * $size,
            options(nostack, readonly, preserves_flags));
    };
    (@a64_one $p:ident, $sum:ident, $size:literal, ($ins:literal, $reg:literal)) => {
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!(
            concat!($ins, " {t0", $reg, "}, [{p}], #", $size),
            "add {s}, {s}, {t0}",
            p = inout(reg) *$p, s = inout(reg) *$sum, t0 = out(reg) _,
            options(nostack, readonly, preserves_flags));
    };
    (@arm $t:ty, $p:ident, $sum:ident, $irp:expr, $count:expr, $arm:literal) => {
        #[cfg(target_arch = "arm")]
        {
            let (mut lo, mut hi) = (*$sum as u32, (*$sum >> 32) as u32);
            core::arch::asm!($irp, $arm, ".endr", "add {p}, {p}, #{step}",
                p = inout(reg) *$p, lo = inout(reg) lo, hi = inout(reg) hi,
                step = const $count * core::mem::size_of::<$t>(),
                out("r2") _, out("r3") _, options(nostack, readonly));
            *$sum = (u64::from(hi) << 32) | u64::from(lo);
        }
    };
    (@other $t:ty, $p:ident, $sum:ident, $count:expr) => {
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "arm")))]
        for _ in 0..$count {
            *$sum = $sum.wrapping_add(std::ptr::read_volatile(*$p).into());
            *$p = $p.add(1);
        }
    };
    (@store $t:ty, $base:ident, $i:ident, $irp:expr, $count:expr,
     $x86:literal, $a64:literal, $arm:literal) => {{
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!($irp, $x86, ".endr", "add {i}, {step}", b = in(reg) $base,
            i = inout(reg) *$i, t = out(reg) _, step = const $count, options(nostack));
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!($irp, $a64, ".endr", "add {i}, {i}, #{step}", b = in(reg) $base,
            i = inout(reg) *$i, t = out(reg) _, step = const $count,
            options(nostack, preserves_flags));
        #[cfg(target_arch = "arm")]
        core::arch::asm!($irp, $arm, ".endr", "add {i}, {i}, #{step}", b = in(reg) $base,
            i = inout(reg) *$i, step = const $count, out("r2") _, out("r3") _, out("r12") _,
            options(nostack, preserves_flags));
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "arm")))]
        for _ in 0..$count {
            std::ptr::write_volatile($base.wrapping_add(*$i), *$i as $t);
            *$i += 1;
        }
    }};
    ($t:ty, $size:literal,
     x86: $x86_load:tt, $x86_store:literal,
     a64: $a64_load:tt, $a64_store:literal,
     arm: $arm_load:literal, $arm_store:literal) => {
        impl Elem for $t {
            #[inline(always)]
            unsafe fn load_pass(p: &mut *const $t, sum: &mut u64) {
                // SAFETY: the caller's contract on p..p + UNROLL.
                unsafe { elem!(@load_pass $t, p, sum, $size, $x86_load, $a64_load, $arm_load) }
            }

            #[inline(always)]
            unsafe fn load_one(p: &mut *const $t, sum: &mut u64) {
                // SAFETY: the caller's contract on p.
                unsafe { elem!(@load_one $t, p, sum, $size, $x86_load, $a64_load, $arm_load) }
            }

            #[inline(always)]
            unsafe fn store_pass(base: *mut $t, i: &mut usize) {
                // SAFETY: the caller's contract on base + i .. + UNROLL.
                unsafe {
                    elem!(@store $t, base, i, elem!(@irp16), UNROLL, $x86_store, $a64_store,
                        $arm_store)
                }
            }

            #[inline(always)]
            unsafe fn store_one(base: *mut $t, i: &mut usize) {
                // SAFETY: the caller's contract on base + i.
                unsafe {
                    elem!(@store $t, base, i, ".irp k,0", 1, $x86_store, $a64_store, $arm_store)
                }
            }
        }
    };
}

elem!(u8, 1,
    x86: ("movzx", ":e", "byte"),
         "lea {t}, [{i} + \\k]\nmov byte ptr [{b} + {i} + \\k], {t:l}",
    a64: ("ldrb", ":w"),
         "add {t}, {i}, #\\k\nstrb {t:w}, [{b}, {t}]",
    arm: "ldrb r2, [{p}, #\\k]\nadds {lo}, {lo}, r2\nadc {hi}, {hi}, #0",
         "add r2, {i}, #\\k\nstrb r2, [{b}, r2]");
elem!(u16, 2,
    x86: ("movzx", ":e", "word"),
         "lea {t}, [{i} + \\k]\nmov word ptr [{b} + 2*{i} + 2*\\k], {t:x}",
    a64: ("ldrh", ":w"),
         "add {t}, {i}, #\\k\nstrh {t:w}, [{b}, {t}, lsl #1]",
    arm: "ldrh r2, [{p}, #2*\\k]\nadds {lo}, {lo}, r2\nadc {hi}, {hi}, #0",
         "add r2, {i}, #\\k\nadd r12, {b}, r2, lsl #1\nstrh r2, [r12]");
elem!(u32, 4,
    x86: ("mov", ":e", "dword"),
         "lea {t}, [{i} + \\k]\nmov dword ptr [{b} + 4*{i} + 4*\\k], {t:e}",
    a64: ("ldr", ":w"),
         "add {t}, {i}, #\\k\nstr {t:w}, [{b}, {t}, lsl #2]",
    arm: "ldr r2, [{p}, #4*\\k]\nadds {lo}, {lo}, r2\nadc {hi}, {hi}, #0",
         "add r2, {i}, #\\k\nstr r2, [{b}, r2, lsl #2]");
elem!(u64, 8,
    x86: ("mov", "", "qword"),
         "lea {t}, [{i} + \\k]\nmov qword ptr [{b} + 8*{i} + 8*\\k], {t}",
    a64: ("ldr", ""),
         "add {t}, {i}, #\\k\nstr {t}, [{b}, {t}, lsl #3]",
    arm: "ldrd r2, r3, [{p}, #8*\\k]\nadds {lo}, {lo}, r2\nadc {hi}, {hi}, r3",
         "add r2, {i}, #\\k\nmov r3, #0\nadd r12, {b}, r2, lsl #3\nstrd r2, r3, [r12]");

/// The 128-bit accesses (x86_64: SSE2 `movdqa`; aarch64: NEON `ldr q`/`str q`), each with what
/// it feeds and the pointers it advances. Refused before the run on other architectures
/// (`has_128`).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod wide {
    use super::UNROLL;

    /// Adds both 64-bit lanes of the 16 bytes at `p` to `sum`; advances `p` by 16.
    ///
    /// # Safety
    /// `p` is 16-byte aligned and readable.
    #[inline(always)]
    pub unsafe fn load(p: &mut *const u8, sum: &mut u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86_64; the caller's contract on p.
        unsafe {
            core::arch::asm!("movdqa {v}, [{p}]", "movq {t}, {v}", "add {s}, {t}",
                "pshufd {v}, {v}, 0xee", "movq {t}, {v}", "add {s}, {t}", "add {p}, 16",
                p = inout(reg) *p, s = inout(reg) *sum, t = out(reg) _, v = out(xmm_reg) _,
                options(nostack, readonly));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is mandatory on AArch64; the caller's contract on p.
        unsafe {
            core::arch::asm!("ldr {v:q}, [{p}], #16", "umov {t}, {v:v}.d[0]",
                "add {s}, {s}, {t}", "umov {t}, {v:v}.d[1]", "add {s}, {s}, {t}",
                p = inout(reg) *p, s = inout(reg) *sum, t = out(reg) _, v = out(vreg) _,
                options(nostack, readonly));
        }
    }

    /// Adds both 64-bit lanes of the UNROLL × 16 bytes at `p` to `sum`; advances `p` past
    /// them. As the 8- to 64-bit passes: four groups of four loads in order, each group
    /// summed in a small tree (`paddq`/`add .2d`, in vector registers) into one accumulator
    /// that is folded into `sum` once per pass, so a pass is UNROLL independent loads instead
    /// of a loop of one load, two lane moves and a chain of scalar adds through `sum` each
    /// (which ran 128-bit loads at a third of the 64-bit rate on a window in cache, x86_64).
    ///
    /// # Safety
    /// `p .. p + 16 × UNROLL` is 16-byte aligned and readable.
    #[inline(always)]
    pub unsafe fn load_pass(p: &mut *const u8, sum: &mut u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86_64; the caller's contract on p.
        unsafe {
            core::arch::asm!("pxor {a}, {a}",
                ".irp k,0,4,8,12",
                "movdqa {v0}, [{p}+16*\\k]",
                "movdqa {v1}, [{p}+16*\\k+16]",
                "movdqa {v2}, [{p}+16*\\k+32]",
                "movdqa {v3}, [{p}+16*\\k+48]",
                "paddq {v0}, {v1}", "paddq {v2}, {v3}", "paddq {v0}, {v2}", "paddq {a}, {v0}",
                ".endr",
                "movq {t}, {a}", "add {s}, {t}", "pshufd {a}, {a}, 0xee", "movq {t}, {a}",
                "add {s}, {t}", "add {p}, {bytes}",
                p = inout(reg) *p, s = inout(reg) *sum, t = out(reg) _, a = out(xmm_reg) _,
                v0 = out(xmm_reg) _, v1 = out(xmm_reg) _, v2 = out(xmm_reg) _,
                v3 = out(xmm_reg) _, bytes = const 16 * UNROLL, options(nostack, readonly));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is mandatory on AArch64; the caller's contract on p.
        unsafe {
            core::arch::asm!("movi {a:v}.2d, #0",
                ".irp k,0,4,8,12",
                "ldr {v0:q}, [{p}, #16*\\k]",
                "ldr {v1:q}, [{p}, #16*\\k+16]",
                "ldr {v2:q}, [{p}, #16*\\k+32]",
                "ldr {v3:q}, [{p}, #16*\\k+48]",
                "add {v0:v}.2d, {v0:v}.2d, {v1:v}.2d", "add {v2:v}.2d, {v2:v}.2d, {v3:v}.2d",
                "add {v0:v}.2d, {v0:v}.2d, {v2:v}.2d", "add {a:v}.2d, {a:v}.2d, {v0:v}.2d",
                ".endr",
                "addp {a:d}, {a:v}.2d", "fmov {t}, {a:d}", "add {s}, {s}, {t}",
                "add {p}, {p}, #{bytes}",
                p = inout(reg) *p, s = inout(reg) *sum, t = out(reg) _, a = out(vreg) _,
                v0 = out(vreg) _, v1 = out(vreg) _, v2 = out(vreg) _, v3 = out(vreg) _,
                bytes = const 16 * UNROLL, options(nostack, readonly, preserves_flags));
        }
    }

    /// As [`load`], and the 16 bytes written to `to` (any alignment), which advances by 16:
    /// memcpy_fromio's DRAM side.
    ///
    /// # Safety
    /// As [`load`]; `to` is writable for 16 bytes.
    #[inline(always)]
    pub unsafe fn load_to(p: &mut *const u8, to: &mut *mut u8, sum: &mut u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in load; to is the caller's.
        unsafe {
            core::arch::asm!("movdqa {v}, [{p}]", "movups [{d}], {v}", "movq {t}, {v}",
                "add {s}, {t}", "pshufd {v}, {v}, 0xee", "movq {t}, {v}", "add {s}, {t}",
                "add {p}, 16", "add {d}, 16",
                p = inout(reg) *p, d = inout(reg) *to, s = inout(reg) *sum, t = out(reg) _,
                v = out(xmm_reg) _, options(nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as in load; to is the caller's.
        unsafe {
            core::arch::asm!("ldr {v:q}, [{p}], #16", "str {v:q}, [{d}], #16",
                "umov {t}, {v:v}.d[0]", "add {s}, {s}, {t}", "umov {t}, {v:v}.d[1]",
                "add {s}, {s}, {t}",
                p = inout(reg) *p, d = inout(reg) *to, s = inout(reg) *sum, t = out(reg) _,
                v = out(vreg) _, options(nostack));
        }
    }

    /// Stores `v + k` in both 64-bit lanes of the 16 bytes at `p + 16 × k`, for k in
    /// 0..UNROLL; advances `p` by 16 × UNROLL and `v` by UNROLL.
    ///
    /// # Safety
    /// `p .. p + 16 × UNROLL` is 16-byte aligned and writable.
    #[inline(always)]
    pub unsafe fn store_pass(p: &mut *mut u8, v: &mut u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86_64; the caller's contract on p.
        unsafe {
            core::arch::asm!(".irp k,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
                "lea {t}, [{v} + \\k]", "movq {x}, {t}", "punpcklqdq {x}, {x}",
                "movdqa [{p} + 16*\\k], {x}", ".endr", "add {p}, {bytes}", "add {v}, {n}",
                p = inout(reg) *p, v = inout(reg) *v, t = out(reg) _, x = out(xmm_reg) _,
                bytes = const 16 * UNROLL, n = const UNROLL, options(nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is mandatory on AArch64; the caller's contract on p.
        unsafe {
            core::arch::asm!(".irp k,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
                "add {t}, {v}, #\\k", "dup {x:v}.2d, {t}", "str {x:q}, [{p}, #16*\\k]", ".endr",
                "add {p}, {p}, #{bytes}", "add {v}, {v}, #{n}",
                p = inout(reg) *p, v = inout(reg) *v, t = out(reg) _, x = out(vreg) _,
                bytes = const 16 * UNROLL, n = const UNROLL, options(nostack, preserves_flags));
        }
    }

    /// Stores `v` in both 64-bit lanes of the 16 bytes at `p`; advances `p` by 16 and `v` by 1.
    ///
    /// # Safety
    /// `p` is 16-byte aligned and writable.
    #[inline(always)]
    pub unsafe fn store_one(p: &mut *mut u8, v: &mut u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86_64; the caller's contract on p.
        unsafe {
            core::arch::asm!("movq {x}, {v}", "punpcklqdq {x}, {x}", "movdqa [{p}], {x}",
                "add {p}, 16", "add {v}, 1", p = inout(reg) *p, v = inout(reg) *v,
                x = out(xmm_reg) _, options(nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is mandatory on AArch64; the caller's contract on p.
        unsafe {
            core::arch::asm!("dup {x:v}.2d, {v}", "str {x:q}, [{p}], #16", "add {v}, {v}, #1",
                p = inout(reg) *p, v = inout(reg) *v, x = out(vreg) _,
                options(nostack, preserves_flags));
        }
    }

    /// Writes `v` in both 64-bit lanes of the 16 bytes at `to` (any alignment): the DRAM side
    /// of memcpy_toio. Advances `to` by 16 and `v` by 1.
    ///
    /// # Safety
    /// `to` is writable for 16 bytes.
    #[inline(always)]
    pub unsafe fn fill(to: &mut *mut u8, v: &mut u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract on to.
        unsafe {
            core::arch::asm!("movq {x}, {v}", "punpcklqdq {x}, {x}", "movups [{d}], {x}",
                "add {d}, 16", "add {v}, 1", d = inout(reg) *to, v = inout(reg) *v,
                x = out(xmm_reg) _, options(nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: the caller's contract on to.
        unsafe {
            core::arch::asm!("dup {x:v}.2d, {v}", "str {x:q}, [{d}], #16", "add {v}, {v}, #1",
                d = inout(reg) *to, v = inout(reg) *v, x = out(vreg) _,
                options(nostack, preserves_flags));
        }
    }

    /// Copies the 16 bytes at `from` (any alignment) to `p` by one 128-bit store; advances
    /// both by 16.
    ///
    /// # Safety
    /// `from` is readable for 16 bytes; `p` is 16-byte aligned and writable.
    #[inline(always)]
    pub unsafe fn store_from(p: &mut *mut u8, from: &mut *const u8) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract on p and from.
        unsafe {
            core::arch::asm!("movups {x}, [{f}]", "movdqa [{p}], {x}", "add {p}, 16",
                "add {f}, 16", p = inout(reg) *p, f = inout(reg) *from, x = out(xmm_reg) _,
                options(nostack));
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: the caller's contract on p and from.
        unsafe {
            core::arch::asm!("ldr {x:q}, [{f}], #16", "str {x:q}, [{p}], #16",
                p = inout(reg) *p, f = inout(reg) *from, x = out(vreg) _,
                options(nostack, preserves_flags));
        }
    }
}

/// No 128-bit access here: `run_pairs` refuses the 128-bit and memcpy widths before any run
/// on this architecture (`has_128`), so these are never reached.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) mod wide {
    const NONE: &str = "128-bit accesses are refused before the run on this architecture";

    pub unsafe fn load(_p: &mut *const u8, _sum: &mut u64) {
        unreachable!("{NONE}")
    }

    pub unsafe fn load_pass(_p: &mut *const u8, _sum: &mut u64) {
        unreachable!("{NONE}")
    }

    pub unsafe fn load_to(_p: &mut *const u8, _to: &mut *mut u8, _sum: &mut u64) {
        unreachable!("{NONE}")
    }

    pub unsafe fn store_pass(_p: &mut *mut u8, _v: &mut u64) {
        unreachable!("{NONE}")
    }

    pub unsafe fn store_one(_p: &mut *mut u8, _v: &mut u64) {
        unreachable!("{NONE}")
    }

    pub unsafe fn fill(_to: &mut *mut u8, _v: &mut u64) {
        unreachable!("{NONE}")
    }

    pub unsafe fn store_from(_p: &mut *mut u8, _from: &mut *const u8) {
        unreachable!("{NONE}")
    }
}

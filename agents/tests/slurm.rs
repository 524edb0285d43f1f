//! `scripts/sweep-slurm.sh` without Slurm: a fake `sbatch` that opens each task's output file
//! first (as Slurm does, so a missing folder fails the task) and runs the array's tasks side by
//! side, and a fake `srun` that runs its command. The tasks share one study and run the trials
//! the script asks for, none twice.

use crate::common;
use std::path::Path;
use std::process::Command;

const SBATCH: &str = r#"#!/usr/bin/env bash
# Fake sbatch: the array's tasks, locally. Like Slurm, each task's output file is opened before
# the script runs, so a missing folder fails the task.
set -u
script="${@: -1}"
array=$(sed -n 's/^#SBATCH --array=//p' "$script" | head -1)
output=$(sed -n 's/^#SBATCH --output=//p' "$script" | head -1)
for a in "${@:1:$#-1}"; do
  case $a in --array=*) array=${a#--array=} ;; --output=*) output=${a#--output=} ;; esac
done
pids=()
for t in $(seq "${array%-*}" "${array#*-}"); do
  out=${output//%x/mtf-sweep}; out=${out//%A/42}; out=${out//%a/$t}
  ( exec >"$out" 2>&1 || exit 1
    SLURM_JOB_ID=42 SLURM_ARRAY_TASK_ID=$t SLURM_CPUS_PER_TASK=1 bash "$script" ) &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
"#;

const SRUN: &str = "#!/usr/bin/env bash\nwhile [[ ${1:-} == --* ]]; do shift; done\nexec \"$@\"\n";

#[test]
fn the_slurm_array_runs_its_tasks_on_one_study() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap();
    let dir = common::tmp("slurm", "array");
    let bin = dir.join("fake-bin");
    std::fs::create_dir_all(dir.join("target/release")).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(root.join("configs"), dir.join("configs")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mtf"), dir.join("target/release/mtf")).unwrap();
    for (name, text) in [("sbatch", SBATCH), ("srun", SRUN)] {
        std::fs::write(bin.join(name), text).unwrap();
        let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(bin.join(name), exec).unwrap();
    }
    let sweep = dir.join("tiny.toml");
    std::fs::write(
        &sweep,
        format!(
            "base = \"{}\"\nsampler = \"random\"\nseed = 1\ntrials = 4\nworkers = 1\n\n[objective]\nmetric = \"eval_welfare.mean\"\ndirection = \"maximize\"\n\n[budget]\nepisodes = 1\neval_seeds = 1\nset = [\"env.rounds=20\", \"learner.kind=fixed\"]\n\n[params]\n\"learner.fixed.threshold\" = {{ type = \"categorical\", choices = [0.0, 0.5, 0.9] }}\n",
            common::quickstart()
        ),
    )
    .unwrap();
    let db = dir.join("study.db");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash")
        .arg(root.join("scripts/sweep-slurm.sh"))
        .arg("--array=0-1")
        .current_dir(&dir)
        .env("PATH", path)
        .env("MTF_STORAGE", format!("sqlite:{}", db.display()))
        .env("MTF_SWEEP", &sweep)
        .env("MTF_TRIALS", "4")
        .output()
        .unwrap();
    let logs: String = (0..2)
        .map(|t| std::fs::read_to_string(dir.join(format!("runs/slurm/mtf-sweep-42_{t}.out"))).unwrap_or_default())
        .collect();
    assert!(out.status.success(), "{}\n{logs}", String::from_utf8_lossy(&out.stderr));
    // The README's study name, four trials complete across the two tasks.
    let (code, status, err) = common::mtf(&["sweep", "status", "--study", "q1", "--storage", &format!("sqlite:{}", db.display())]);
    assert_eq!(code, 0, "{err}");
    assert!(status.contains(": 4 trials") && status.contains("complete 4"), "{status}\n{logs}");
    let _ = std::fs::remove_dir_all(&dir);
}

//! One run, start to end: the processes and devices, MNIST, the model (built, loaded or
//! resumed), training (`train.rs`), and the results.

use std::path::Path;
use std::time::Instant;

use suanli::data::{Dataset, Mnist};
use suanli::nn::{Checkpoint, Loss, Optimizer, Sequential};
use suanli::{Device, DeviceGroup, Tensor};

use super::{report, train, Args, Example, Validation};

/// Where the run happens: this process among the MPI job's, and the devices it drives.
pub struct World {
    /// This process's rank (0 without MPI).
    pub rank: usize,
    /// Processes in the job (1 without MPI).
    pub ranks: usize,
    /// Rank 0, the one that prints.
    pub root: bool,
    /// The device the model lives on (the group's first with `--devices` or `--mpi`).
    pub dev: Device,
    /// The devices of data-parallel training, if any.
    pub group: Option<DeviceGroup>,
    /// The MPI job, with `--mpi`.
    #[cfg(feature = "mpi")]
    pub mpi: Option<suanli::multi::mpi::Mpi>,
}

impl World {
    /// Joins the MPI job (with `--mpi`) and opens the devices.
    fn open(args: &Args) -> suanli::Result<World> {
        #[cfg(feature = "mpi")]
        let mpi = if args.mpi {
            Some(suanli::multi::mpi::Mpi::init()?)
        } else {
            None
        };
        #[cfg(feature = "mpi")]
        let (rank, ranks) = {
            use suanli::multi::Exchange;
            mpi.as_ref().map_or((0, 1), |m| (m.rank(), m.ranks()))
        };
        #[cfg(not(feature = "mpi"))]
        let (rank, ranks) = (0usize, 1usize);
        #[cfg_attr(not(feature = "mpi"), allow(unused_mut))] // MPI may choose the device
        let mut group = match &args.devices {
            Some(list) => Some(DeviceGroup::parse(list)?),
            None => None,
        };
        #[cfg(feature = "mpi")]
        if let (Some(m), None) = (&mpi, &group) {
            // A rank drives its local GPU (or --device).
            let spec = (args.device != "auto").then_some(args.device.as_str());
            group = Some(DeviceGroup::from_devices(vec![m.device(spec)?])?);
        }
        let dev = match &group {
            Some(g) => g.devices()[0].clone(),
            None => Device::open(&args.device)?,
        };
        Ok(World {
            rank,
            ranks,
            root: rank == 0,
            dev,
            group,
            #[cfg(feature = "mpi")]
            mpi,
        })
    }
}

/// MNIST on the host, and uploaded once as u8 pixels (scaled on the device).
pub struct Data {
    /// The images and labels on the host.
    pub mnist: Mnist,
    /// Training images used (`--train-rows`, at most 60,000).
    pub rows: usize,
    /// The shape of one sample.
    pub shape: &'static [usize],
    /// The training images on the model's device (with the validation split, if any).
    pub train: Dataset,
    /// The test images on the model's device.
    pub test: Dataset,
}

impl Data {
    fn load(
        dev: &Device,
        args: &Args,
        shape: &'static [usize],
        fashion: bool,
    ) -> suanli::Result<Data> {
        let mnist = if fashion {
            Mnist::load_fashion()?
        } else {
            Mnist::load()?
        };
        let all = mnist.train_labels.len();
        let rows = args.train_rows.unwrap_or(all).min(all);
        let test = upload(dev, &mnist.test_images, &mnist.test_labels, shape)?;
        let train = upload(
            dev,
            &mnist.train_images[..rows * 784],
            &mnist.train_labels[..rows],
            shape,
        )?;
        Ok(Data {
            mnist,
            rows,
            shape,
            train,
            test,
        })
    }

    /// The training images on another device (data-parallel training).
    pub fn upload_train(&self, dev: &Device) -> suanli::Result<Dataset> {
        let m = &self.mnist;
        let (images, labels) = (
            &m.train_images[..self.rows * 784],
            &m.train_labels[..self.rows],
        );
        upload(dev, images, labels, self.shape)
    }

    /// Training rows of each epoch: all, less those the validation split holds out (Keras's
    /// rule, as `fit` applies it).
    pub fn trained_rows(&self, validation: &Validation) -> usize {
        match validation {
            Validation::TestSet => self.rows,
            Validation::Split(f) => self.rows - (self.rows as f64 * f) as usize,
        }
    }
}

/// 784-byte images scaled by 1/255, as samples of `shape`.
fn upload(dev: &Device, images: &[u8], labels: &[u8], shape: &[usize]) -> suanli::Result<Dataset> {
    Dataset::from_u8(dev, images, 784, 1.0 / 255.0, labels)?.with_sample_shape(shape)
}

/// The model to train: built by the example, loaded from `--load`, or resumed from a
/// checkpoint (`--resume`) with the checkpoint to continue.
fn model(
    ex: &Example,
    args: &Args,
    dev: &Device,
    root: bool,
) -> suanli::Result<(Sequential, Option<Checkpoint>)> {
    let clip = suanli::nn::Clip {
        global_norm: args.global_clipnorm,
        ..Default::default()
    };
    let (mut m, ck) = model_as_given(ex, args, dev, root)?;
    if args.global_clipnorm.is_some() {
        m.set_gradient_clipping(clip)?;
    }
    m.set_precision_policy(args.precision);
    Ok((m, ck))
}

/// The model as built, loaded or resumed (see [`model`]).
fn model_as_given(
    ex: &Example,
    args: &Args,
    dev: &Device,
    root: bool,
) -> suanli::Result<(Sequential, Option<Checkpoint>)> {
    match (&args.resume, &args.load) {
        (None, None) => Ok(((ex.build)(dev, args)?, None)),
        // Weights saved by Rust or Python; `--epochs 0` evaluates them as they are.
        (None, Some(path)) => {
            let mut m = Sequential::load(dev, path)?;
            m.compile(
                Optimizer::adam().with_lr(args.lr),
                Loss::SparseCategoricalCrossentropy,
            )?;
            say!(root, "Loaded {}", path.display());
            Ok((m, None))
        }
        (Some(path), None) => {
            let (m, ck) = Sequential::load_checkpoint(dev, path)?;
            say!(
                root,
                "Resuming from {} after epoch {} (seed {}, optimizer step {})",
                path.display(),
                ck.epoch,
                ck.seed,
                ck.step
            );
            Ok((m, Some(ck)))
        }
        (Some(_), Some(_)) => unreachable!("args::parse refuses --load with --resume"),
    }
}

/// Runs `ex` as `args` say.
pub fn run(ex: &Example, args: &Args) -> suanli::Result<()> {
    let mut world = World::open(args)?;
    let (dev, root) = (world.dev.clone(), world.root);
    let info = dev.info();
    say!(
        root,
        "Device: {} ({}, {}, {})",
        dev.name(),
        info.kind,
        info.backend,
        info.driver_info
    );
    if !dev.is_gpu() {
        say!(root, "Note: this is a software adapter running on the CPU; a GPU driver makes this much faster.");
    }

    let t = Instant::now();
    let data = Data::load(&dev, args, ex.sample_shape, ex.fashion)?;
    say!(
        root,
        "MNIST: {} train / {} test images, loaded in {:.2}s{}",
        data.train.len(),
        data.test.len(),
        t.elapsed().as_secs_f64(),
        match ex.validation {
            Validation::TestSet => String::new(),
            Validation::Split(_) => format!(
                "; the last {} training images held out for validation",
                data.rows - data.trained_rows(&ex.validation)
            ),
        }
    );

    let (mut model, resume) = model(ex, args, &dev, root)?;
    if !args.quiet && root {
        print!("{}", model.summary());
    }
    if args.profile {
        dev.set_profiling(true);
    }
    let t = Instant::now();
    let history = train::fit(ex, args, &mut world, &mut model, resume.as_ref(), &data)?;
    let total = t.elapsed().as_secs_f64();
    if args.profile {
        report::profile(&dev, &history, total, root)?;
    }

    // ---- results ----------------------------------------------------------------------------
    if let (true, Some(path)) = (args.save_every_rank, &args.save) {
        model.save(Path::new(&format!("{}.rank{}", path.display(), world.rank)))?;
    }
    if !root {
        return Ok(());
    }
    let eval = model.evaluate(&data.test, 1000)?;
    println!(
        "Test accuracy: {:.4} (loss {:.4}) after {} epochs in {:.1}s",
        eval.accuracy.unwrap_or(f64::NAN),
        eval.loss,
        args.epochs,
        total
    );
    if args.bench {
        let rows = data.trained_rows(&ex.validation);
        report::bench(ex, args, &dev, &history, rows, eval.accuracy);
    }
    // A sanity check through the plain predict path on a few test images.
    let x: Vec<f32> = data.mnist.test_images[..784 * 8]
        .iter()
        .map(|&p| p as f32 / 255.0)
        .collect();
    let shape: Vec<usize> = [8].iter().chain(ex.sample_shape).copied().collect();
    let classes = model.predict_classes(&Tensor::from_slice(&dev, &x, &shape)?)?;
    println!(
        "First test digits: predicted {:?}, labels {:?}",
        classes,
        &data.mnist.test_labels[..8]
    );
    if let Some(path) = &args.save {
        model.save(path)?;
        println!("Weights written to {}", path.display());
    }
    Ok(())
}

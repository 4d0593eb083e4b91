//! 2-D convolutions (NHWC input, HWIO kernel) and their gradients, written as the textbook
//! loops over every output and tap (scatter for the gradients), independently of the
//! kernels' GEMM formulation and of the crate's own shape arithmetic.

use crate::reference::activation::activate;
use crate::vocab::Activation;

/// A convolution's shape: input (batch, h, w, c), `oc` filters of (kh, kw), strides,
/// dilations, and padding ("same" or "valid", as TensorFlow computes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // named as the module docs name them
pub struct ConvShape {
    pub batch: usize,
    pub h: usize,
    pub w: usize,
    pub c: usize,
    pub oc: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub dh: usize,
    pub dw: usize,
    /// "same" padding (else "valid").
    pub same: bool,
}

impl ConvShape {
    /// Output rows and the padding above the first: TensorFlow's `SAME` puts
    /// `max((out−1)·s + (k−1)·d + 1 − in, 0)` zeros around, the smaller half first.
    pub(crate) fn axis(input: usize, k: usize, s: usize, d: usize, same: bool) -> (usize, isize) {
        let span = (k - 1) * d + 1;
        if same {
            let out = input.div_ceil(s);
            let need = ((out - 1) * s + span) as isize - input as isize;
            (out, need.max(0) / 2)
        } else {
            ((input - span) / s + 1, 0)
        }
    }

    /// (oh, ow).
    pub fn out(&self) -> (usize, usize) {
        (
            Self::axis(self.h, self.kh, self.sh, self.dh, self.same).0,
            Self::axis(self.w, self.kw, self.sw, self.dw, self.same).0,
        )
    }

    fn pad(&self) -> (isize, isize) {
        (
            Self::axis(self.h, self.kh, self.sh, self.dh, self.same).1,
            Self::axis(self.w, self.kw, self.sw, self.dw, self.same).1,
        )
    }

    /// Visits every (output element, tap) pair whose input position lies inside the image:
    /// `f(y index, x index, kernel index)` with y (batch, oh, ow, oc), x (batch, h, w, c),
    /// kernel (kh, kw, c, oc).
    fn each(&self, mut f: impl FnMut(usize, usize, usize)) {
        let (oh, ow) = self.out();
        let (ph, pw) = self.pad();
        for n in 0..self.batch {
            for i in 0..oh {
                for j in 0..ow {
                    for a in 0..self.kh {
                        let hi = (i * self.sh + a * self.dh) as isize - ph;
                        if hi < 0 || hi >= self.h as isize {
                            continue;
                        }
                        for b in 0..self.kw {
                            let wi = (j * self.sw + b * self.dw) as isize - pw;
                            if wi < 0 || wi >= self.w as isize {
                                continue;
                            }
                            for ci in 0..self.c {
                                let xi = ((n * self.h + hi as usize) * self.w + wi as usize)
                                    * self.c
                                    + ci;
                                for co in 0..self.oc {
                                    let yi = ((n * oh + i) * ow + j) * self.oc + co;
                                    let ki = ((a * self.kw + b) * self.c + ci) * self.oc + co;
                                    f(yi, xi, ki);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Values of the output.
    pub fn y_len(&self) -> usize {
        let (oh, ow) = self.out();
        self.batch * oh * ow * self.oc
    }
}

/// `y = act(conv(x, w) + bias)`.
pub fn conv2d(
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    act: Activation,
    s: &ConvShape,
) -> Vec<f64> {
    let mut y = vec![0.0f64; s.y_len()];
    s.each(|yi, xi, ki| y[yi] += x[xi] as f64 * w[ki] as f64);
    for (i, v) in y.iter_mut().enumerate() {
        let b = bias.map_or(0.0, |b| b[i % s.oc] as f64);
        *v = activate(act, *v + b);
    }
    y
}

/// `dx` from `dy`: every output's gradient sent back along each of its taps.
pub fn conv2d_backward_data(dy: &[f32], w: &[f32], s: &ConvShape) -> Vec<f64> {
    let mut dx = vec![0.0f64; s.batch * s.h * s.w * s.c];
    s.each(|yi, xi, ki| dx[xi] += dy[yi] as f64 * w[ki] as f64);
    dx
}

/// `(dW, db)` from `x` and `dy`.
pub fn conv2d_backward_weights(x: &[f32], dy: &[f32], s: &ConvShape) -> (Vec<f64>, Vec<f64>) {
    let mut dw = vec![0.0f64; s.kh * s.kw * s.c * s.oc];
    s.each(|yi, xi, ki| dw[ki] += x[xi] as f64 * dy[yi] as f64);
    let mut db = vec![0.0f64; s.oc];
    for (i, &g) in dy.iter().enumerate() {
        db[i % s.oc] += g as f64;
    }
    (dw, db)
}

"""tricycle: a small, readable, fast deep-learning library on numpy and cupy.

``import tricycle as tc`` gives the Tensor, the factories, the common ops as functions and
the tools around them::

    import tricycle as tc

    tc.manual_seed(0)
    x = tc.randn(4, 3, requires_grad=True)
    y = tc.softmax(tc.einsum("ij,jk->ik", x, tc.ones(3, 5))).sum()
    y.backward()  # x.grad

Every module stays importable on its own (``from tricycle.tensor import Tensor`` gives a
Tensor with its operators). Importing tricycle loads nothing but this file: each name below
is imported from its module the first time it is used, so ``import tricycle.tensor`` loads the
engine alone. Nothing starts and no library setting changes; cupy is imported only when a
tensor is moved to a GPU. The layer catalogue is the sub-package ``tricycle.nn``; the one
mark importing leaves is a finder on ``sys.meta_path`` that answers for the catalogue's old
module names alone (``_Moved``).

A PyTorch script finds torch's top-level names here: the factories, the dtypes
(``tricycle.long``), ``tensor``, ``from_numpy``, ``matmul``, ``argmax``, the grad modes
(``set_grad_enabled``, ``enable_grad``, ``inference_mode``: ``tricycle.grad_modes``) and
the rest of ``tricycle.torch_functions`` (and ``torch_math``, ``torch_indexing``,
``torch_random``), ``save`` and ``load`` (``tricycle.serialization``),
and the sub-packages ``tricycle.cuda`` and ``tricycle.utils.data``, reached as attributes as torch's
are (imported on first use too). As ``torch.tensor``, ``tricycle.tensor`` is the function;
the Tensor's module still imports by its name (``from tricycle.tensor import Tensor``)."""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types as _types

__version__ = "0.1.0"

_PUBLIC = {  # name -> (module, attribute): imported on first use (PEP 562)
    "argsort": ("tricycle.ops", "argsort"),
    "draw": ("tricycle.draw", "draw"),
    "sort": ("tricycle.torch_functions_more", "sort"),
    "range": ("tricycle.torch_functions_more", "inclusive_range"),  # torch's, end included
    "square": ("tricycle.torch_functions_more", "square"),
    "neg": ("tricycle.complex_functions", "neg"),
    "Accelerator": ("tricycle.apps.accelerator", "Accelerator"),
    "Einsum": ("tricycle.einsum", "Einsum"),
    "GeLU": ("tricycle.activation", "GeLU"),
    "GradcheckError": ("tricycle.gradcheck", "GradcheckError"),
    "LeakyReLU": ("tricycle.activation", "LeakyReLU"),
    "LogSoftmax": ("tricycle.functions", "LogSoftmax"),
    "ReLU": ("tricycle.activation", "ReLU"),
    "Softmax": ("tricycle.functions", "Softmax"),
    "Swish": ("tricycle.activation", "Swish"),
    "Tensor": ("tricycle.tensor", "Tensor"),
    "abs": ("tricycle.complex_functions", "abs"),
    "arange": ("tricycle.factories", "arange"),
    "cat": ("tricycle.complex_functions", "cat"),
    "checks_pending": ("tricycle.backends.cuda.deferred", "checks_pending"),
    "clip": ("tricycle.unary", "clip"),
    "concatenate": ("tricycle.complex_functions", "concatenate"),
    "einsum": ("tricycle.complex_functions", "einsum"),
    "exp": ("tricycle.complex_functions", "exp"),
    "expand_dims": ("tricycle.ops", "expand_dims"),
    "empty_like": ("tricycle.factories", "empty_like"),
    # comparisons, bitwise ops, torch.cross, torch.svd and meshgrid (torch_functions_more)
    "eq": ("tricycle.torch_functions_more", "eq"),
    "ne": ("tricycle.torch_functions_more", "ne"),
    "lt": ("tricycle.torch_functions_more", "lt"),
    "le": ("tricycle.torch_functions_more", "le"),
    "gt": ("tricycle.torch_functions_more", "gt"),
    "ge": ("tricycle.torch_functions_more", "ge"),
    "bitwise_and": ("tricycle.torch_functions_more", "bitwise_and"),
    "bitwise_or": ("tricycle.torch_functions_more", "bitwise_or"),
    "bitwise_xor": ("tricycle.torch_functions_more", "bitwise_xor"),
    "bitwise_not": ("tricycle.torch_functions_more", "bitwise_not"),
    "cross": ("tricycle.torch_functions_more", "cross"),
    "svd": ("tricycle.torch_functions_more", "svd"),
    # torch's linear-algebra functions outside torch.linalg (torch.det(A)): the Tensor methods'
    "det": ("tricycle.linalg.tensor_methods", "det"),
    "logdet": ("tricycle.linalg.tensor_methods", "logdet"),
    "slogdet": ("tricycle.linalg.tensor_methods", "slogdet"),
    "inverse": ("tricycle.linalg.tensor_methods", "inverse"),
    "matrix_power": ("tricycle.linalg.tensor_methods", "matrix_power"),
    "pinverse": ("tricycle.linalg.tensor_methods", "pinverse"),
    "meshgrid": ("tricycle.torch_functions_more", "meshgrid"),
    # torch's trigonometric functions and in-place functions of x (trigonometry)
    "tan": ("tricycle.trigonometry", "tan"),
    "asin": ("tricycle.trigonometry", "asin"),
    "acos": ("tricycle.trigonometry", "acos"),
    "atan": ("tricycle.trigonometry", "atan"),
    "arcsin": ("tricycle.trigonometry", "arcsin"),
    "arccos": ("tricycle.trigonometry", "arccos"),
    "arctan": ("tricycle.trigonometry", "arctan"),
    "sin_": ("tricycle.trigonometry", "sin_"),
    "cos_": ("tricycle.trigonometry", "cos_"),
    "tan_": ("tricycle.trigonometry", "tan_"),
    "asin_": ("tricycle.trigonometry", "asin_"),
    "acos_": ("tricycle.trigonometry", "acos_"),
    "atan_": ("tricycle.trigonometry", "atan_"),
    "sinh_": ("tricycle.trigonometry", "sinh_"),
    "cosh_": ("tricycle.trigonometry", "cosh_"),
    "tanh_": ("tricycle.trigonometry", "tanh_"),
    "exp_": ("tricycle.trigonometry", "exp_"),
    "sqrt_": ("tricycle.trigonometry", "sqrt_"),
    "eye": ("tricycle.factories", "eye"),
    "full": ("tricycle.factories", "full"),
    "full_like": ("tricycle.factories", "full_like"),
    "gradcheck": ("tricycle.gradcheck", "gradcheck"),
    "linspace": ("tricycle.factories", "linspace"),
    "log": ("tricycle.complex_functions", "log"),
    "manual_seed": ("tricycle.random", "manual_seed"),
    "use_deterministic_algorithms": ("tricycle.random", "use_deterministic_algorithms"),
    "are_deterministic_algorithms_enabled": (
        "tricycle.random",
        "are_deterministic_algorithms_enabled",
    ),
    "masked_fill": ("tricycle.ops", "masked_fill"),
    "mean": ("tricycle.torch_math", "mean"),  # Tensor.mean's: numpy's axis or torch's dim
    "no_grad": ("tricycle.tensor", "no_grad"),
    "ones": ("tricycle.factories", "ones"),
    "ones_like": ("tricycle.factories", "ones_like"),
    "raise_pending_errors": ("tricycle.backends.cuda.deferred", "raise_pending_errors"),
    "rand": ("tricycle.factories", "rand"),
    "rand_like": ("tricycle.factories", "rand_like"),
    "randint": ("tricycle.factories", "randint"),
    "randn": ("tricycle.factories", "randn"),
    "randn_like": ("tricycle.factories", "randn_like"),
    "repeat": ("tricycle.ops", "repeat"),
    "reshape": ("tricycle.complex_functions", "reshape"),
    "sigmoid": ("tricycle.complex_functions", "sigmoid"),
    "sqrt": ("tricycle.complex_functions", "sqrt"),
    "stack": ("tricycle.complex_functions", "stack"),
    "sum": ("tricycle.torch_math", "sum"),  # Tensor.sum's: numpy's axis or torch's dim
    "to_tensor": ("tricycle.tensor", "to_tensor"),
    "isfinite": ("tricycle.torch_functions_more", "isfinite"),
    "isnan": ("tricycle.torch_functions_more", "isnan"),
    "isinf": ("tricycle.torch_functions_more", "isinf"),
    "set_printoptions": ("tricycle.torch_functions_more", "set_printoptions"),
    "where": ("tricycle.complex_functions", "where"),
    "zeros": ("tricycle.factories", "zeros"),
    "zeros_like": ("tricycle.factories", "zeros_like"),
    "softmax": ("tricycle.nn.functional", "softmax"),
    "log_softmax": ("tricycle.nn.functional", "log_softmax"),
    "relu": ("tricycle.nn.functional", "relu"),
    "relu_": ("tricycle.nn.functional", "relu_"),
    "leaky_relu": ("tricycle.nn.functional", "leaky_relu"),
    "gelu": ("tricycle.nn.functional", "gelu"),
    "silu": ("tricycle.nn.functional", "silu"),
    "topk": ("tricycle.ops", "topk"),
    "multinomial": ("tricycle.factories", "multinomial"),
    # torch's top-level functions (torch_functions: thin calls of the ops above), save and load
    "allclose": ("tricycle.torch_functions", "allclose"),
    "argmax": ("tricycle.torch_functions", "argmax"),
    "argmin": ("tricycle.torch_functions", "argmin"),
    "as_tensor": ("tricycle.torch_functions", "as_tensor"),
    "bmm": ("tricycle.torch_functions", "bmm"),
    "clamp": ("tricycle.torch_functions", "clamp"),
    "device": ("tricycle.backend", "device"),
    "empty": ("tricycle.torch_functions", "empty"),
    "FloatTensor": ("tricycle.torch_functions", "FloatTensor"),  # torch's legacy constructors
    "DoubleTensor": ("tricycle.torch_functions", "DoubleTensor"),
    "LongTensor": ("tricycle.torch_functions", "LongTensor"),
    "IntTensor": ("tricycle.torch_functions", "IntTensor"),
    "BoolTensor": ("tricycle.torch_functions", "BoolTensor"),
    "sparse_coo_tensor": ("tricycle.sparse", "sparse_coo_tensor"),
    "spmm": ("tricycle.sparse", "spmm"),
    "smm": ("tricycle.sparse", "smm"),
    "sparse_coo": ("tricycle.torch_misc", "sparse_coo"),  # the layout, beside strided
    "sparse_csr": ("tricycle.torch_misc", "sparse_csr"),
    "sparse_csr_tensor": ("tricycle.sparse", "sparse_csr_tensor"),
    "enable_grad": ("tricycle.grad_modes", "enable_grad"),
    "equal": ("tricycle.torch_functions", "equal"),
    "from_numpy": ("tricycle.torch_functions", "from_numpy"),
    "inference_mode": ("tricycle.grad_modes", "inference_mode"),
    "is_grad_enabled": ("tricycle.grad_modes", "is_grad_enabled"),
    "is_tensor": ("tricycle.torch_functions", "is_tensor"),
    "isclose": ("tricycle.torch_functions", "isclose"),
    "matmul": ("tricycle.torch_functions", "matmul"),
    "max": ("tricycle.torch_functions", "max"),
    "min": ("tricycle.torch_functions", "min"),
    "numel": ("tricycle.torch_functions", "numel"),
    "pow": ("tricycle.torch_functions", "pow"),
    "randperm": ("tricycle.torch_functions", "randperm"),
    "set_grad_enabled": ("tricycle.grad_modes", "set_grad_enabled"),
    "tensor": ("tricycle.torch_functions", "tensor"),
    "unflatten": ("tricycle.torch_functions", "unflatten"),
    "get_default_dtype": ("tricycle.torch_functions", "get_default_dtype"),
    "set_default_dtype": ("tricycle.torch_functions", "set_default_dtype"),
    "set_default_device": ("tricycle.torch_functions", "set_default_device"),
    "set_float32_matmul_precision": ("tricycle.precision", "set_float32_matmul_precision"),
    "get_float32_matmul_precision": ("tricycle.precision", "get_float32_matmul_precision"),
    # torch's reductions, step functions and distances (torch_math), indexing functions
    # (torch_indexing) and random draws (torch_random): calls of the Tensor methods
    "logsumexp": ("tricycle.torch_math", "logsumexp"),
    "cumprod": ("tricycle.torch_math", "cumprod"),
    "amax": ("tricycle.torch_math", "amax"),
    "amin": ("tricycle.torch_math", "amin"),
    "count_nonzero": ("tricycle.torch_math", "count_nonzero"),
    "all": ("tricycle.torch_math", "all_nonzero"),
    "any": ("tricycle.torch_math", "any_nonzero"),
    "histogram": ("tricycle.torch_math", "histogram"),
    "histc": ("tricycle.tensor_extra", "histc"),
    "clamp_min": ("tricycle.tensor_extra", "clamp_min"),
    "clamp_max": ("tricycle.tensor_extra", "clamp_max"),
    "maximum": ("tricycle.torch_math", "maximum"),
    "minimum": ("tricycle.torch_math", "minimum"),
    "sign": ("tricycle.torch_math", "sign"),
    "round": ("tricycle.torch_math", "round"),
    "floor": ("tricycle.torch_math", "floor"),
    "ceil": ("tricycle.torch_math", "ceil"),
    "trunc": ("tricycle.torch_math", "trunc"),
    "cdist": ("tricycle.torch_math", "cdist"),
    "nansum": ("tricycle.torch_math", "nansum"),
    "nanmean": ("tricycle.torch_math", "nanmean"),
    "median": ("tricycle.torch_math", "median"),
    "nanmedian": ("tricycle.torch_math", "nanmedian"),
    "mode": ("tricycle.torch_math", "mode"),
    "kthvalue": ("tricycle.torch_math", "kthvalue"),
    "quantile": ("tricycle.torch_math", "quantile"),
    "nanquantile": ("tricycle.torch_math", "nanquantile"),
    "add": ("tricycle.torch_math", "add"),
    "sub": ("tricycle.torch_math", "sub"),
    "subtract": ("tricycle.torch_math", "subtract"),
    "mul": ("tricycle.torch_math", "mul"),
    "multiply": ("tricycle.torch_math", "multiply"),
    "div": ("tricycle.torch_math", "div"),
    "divide": ("tricycle.torch_math", "divide"),
    "true_divide": ("tricycle.torch_math", "true_divide"),
    "absolute": ("tricycle.torch_math", "absolute"),
    "log1p": ("tricycle.torch_math", "log1p"),
    "log2": ("tricycle.torch_math", "log2"),
    "log10": ("tricycle.torch_math", "log10"),
    "fmod": ("tricycle.torch_math", "fmod"),
    "remainder": ("tricycle.torch_math", "remainder"),
    "logical_not": ("tricycle.torch_math", "logical_not"),
    "logical_and": ("tricycle.torch_math", "logical_and"),
    "logical_or": ("tricycle.torch_math", "logical_or"),
    "logical_xor": ("tricycle.torch_math", "logical_xor"),
    "nan_to_num": ("tricycle.torch_math", "nan_to_num"),
    "mm": ("tricycle.torch_math", "mm"),
    "mv": ("tricycle.torch_math", "mv"),
    "addmm": ("tricycle.torch_math", "addmm"),
    "searchsorted": ("tricycle.torch_indexing", "searchsorted"),
    "bucketize": ("tricycle.torch_indexing", "bucketize"),
    "scatter": ("tricycle.torch_indexing", "scatter"),
    "scatter_add": ("tricycle.torch_indexing", "scatter_add"),
    "nonzero": ("tricycle.torch_indexing", "nonzero"),
    "unique": ("tricycle.torch_indexing", "unique"),
    "bincount": ("tricycle.torch_indexing", "bincount"),
    "index_add": ("tricycle.torch_indexing", "index_add"),
    "index_copy": ("tricycle.torch_indexing", "index_copy"),
    "index_fill": ("tricycle.torch_indexing", "index_fill"),
    "masked_scatter": ("tricycle.torch_indexing", "masked_scatter"),
    "bernoulli": ("tricycle.torch_random", "bernoulli"),
    "normal": ("tricycle.torch_random", "normal"),
    "randint_like": ("tricycle.torch_random", "randint_like"),
    "Generator": ("tricycle.torch_random", "Generator"),
    "load": ("tricycle.serialization", "load"),
    "save": ("tricycle.serialization", "save"),
    "vmap": ("tricycle.func", "vmap"),  # torch.vmap, torch.func's
    "autocast": ("tricycle.amp", "autocast"),  # torch.autocast (torch.amp's: tricycle.amp)
    # torch's sub-packages a script reaches as attributes (torch.cuda.is_available(),
    # torch.utils.data.DataLoader, torch.optim.SGD, torch.nn.Linear): the module itself
    # (attribute None), imported on first use
    "cuda": ("tricycle.cuda", None),
    "accelerator": ("tricycle.cuda", None),  # torch.accelerator: CUDA is tricycle's one
    "amp": ("tricycle.amp", None),
    "backends": ("tricycle.backends", None),  # torch.backends.mps.is_available()
    "distributed": ("tricycle.distributed", None),  # torch.distributed.rpc.api.RRef
    "distributions": ("tricycle.distributions", None),
    "multiprocessing": ("tricycle.multiprocessing", None),  # torch.multiprocessing.spawn
    "linalg": ("tricycle.linalg", None),
    "func": ("tricycle.func", None),  # torch.func's transforms
    "compiler": ("tricycle.compiler", None),  # torch.compiler.disable
    "random": ("tricycle.random", None),  # torch.random.fork_rng
    "testing": ("tricycle.testing", None),  # torch.testing.assert_close
    "special": ("tricycle.special", None),  # torch.special.erf(x)
    "sparse": ("tricycle.sparse", None),  # torch.sparse.mm(adj, x)
    "version": ("tricycle.version", None),  # torch.version.cuda
    "serialization": ("tricycle.serialization", None),  # torch.serialization.safe_globals
    "autograd": ("tricycle.autograd", None),
    "profiler": ("tricycle.profiler", None),  # torch.profiler.profile, record_function
    "nn": ("tricycle.nn", None),
    "optim": ("tricycle.optim", None),
    "utils": ("tricycle.utils", None),
    "jit": ("tricycle.jit", None),  # torch.jit as under PYTORCH_JIT=0
    "futures": ("tricycle.futures", None),  # torch.futures.Future, collect_all, wait_all
    "types": ("tricycle.types", None),  # torch.types' aliases
    "hub": ("tricycle.hub", None),  # torch.hub.load_state_dict_from_url
    "signal": ("tricycle.signal", None),  # torch.signal.windows.hann
    "fft": ("tricycle.fft", None),  # torch.fft, on tricycle.complex_tensor's complex tensors
    # torch's dtype names, as numpy's scalar types (what every tricycle dtype= takes): a port
    # writes tricycle.arange(t, dtype=tricycle.long). Not in __all__: a star import would
    # shadow Python's bool, int and float.
    "bool": ("numpy", "bool_"),
    "uint8": ("numpy", "uint8"),
    "int8": ("numpy", "int8"),
    "int16": ("numpy", "int16"),
    "short": ("numpy", "int16"),
    "int32": ("numpy", "int32"),
    "int": ("numpy", "int32"),
    "int64": ("numpy", "int64"),
    "long": ("numpy", "int64"),
    "float16": ("numpy", "float16"),
    "half": ("numpy", "float16"),
    "float32": ("numpy", "float32"),
    "float": ("numpy", "float32"),
    "float64": ("numpy", "float64"),
    "double": ("numpy", "float64"),
    "complex64": ("numpy", "complex64"),
    "cfloat": ("numpy", "complex64"),
    "complex128": ("numpy", "complex128"),
    "cdouble": ("numpy", "complex128"),
    "bfloat16": ("tricycle.torch_functions", "bfloat16"),  # ml_dtypes', imported on first use
    "uint16": ("numpy", "uint16"),
    "uint32": ("numpy", "uint32"),
    "uint64": ("numpy", "uint64"),
    "float8_e4m3fn": ("tricycle.torch_dtypes", "float8_e4m3fn"),  # ml_dtypes', as bfloat16
    "float8_e5m2": ("tricycle.torch_dtypes", "float8_e5m2"),
    "float8_e4m3fnuz": ("tricycle.torch_dtypes", "float8_e4m3fnuz"),
    "float8_e5m2fnuz": ("tricycle.torch_dtypes", "float8_e5m2fnuz"),
    # torch's constants (torch.pi in a GELU's sqrt(2 / pi), -torch.inf in a causal mask):
    # Python floats, as torch's are
    "pi": ("math", "pi"),
    "e": ("math", "e"),
    "inf": ("math", "inf"),
    "nan": ("math", "nan"),
}
# modules of torch's functions under torch's own names: module -> its names, in one string
_BY_MODULE: dict[str, str] = {
    "tricycle.linalg.legacy": "cholesky qr lu lu_unpack lu_solve triangular_solve cholesky_solve "
    "cholesky_inverse matrix_exp solve lstsq symeig eig matrix_rank",
    "tricycle.linalg.householder": "geqrf orgqr ormqr",
    "tricycle.linalg.lowrank": "svd_lowrank pca_lowrank",
    "tricycle.linalg.lobpcg": "lobpcg",
    "tricycle.random": "seed initial_seed get_deterministic_debug_mode "
    "set_deterministic_debug_mode is_deterministic_algorithms_warn_only_enabled",
    "tricycle.torch_rng": "get_rng_state set_rng_state default_generator",
    "tricycle.torch_dtypes": "Size can_cast finfo iinfo is_storage promote_types result_type "
    "set_default_tensor_type",
    "tricycle.apps.threads": "set_num_threads get_num_threads set_num_interop_threads "
    "get_num_interop_threads",
    "tricycle.torch_shapes": "ravel msort "
    "broadcast_shapes broadcast_tensors atleast_1d atleast_2d atleast_3d hstack "
    "vstack row_stack dstack column_stack dsplit",
    "tricycle.torch_strided": "as_strided as_strided_scatter slice_inverse",
    "tricycle.torch_bitwise": "bitwise_left_shift bitwise_right_shift nonzero_static hash_tensor",
    "tricycle.torch_scatter": "argwhere scatter_reduce select_scatter "
    "slice_scatter diagonal_scatter isin unique_consecutive tril_indices triu_indices isposinf "
    "isneginf isreal is_floating_point is_complex is_nonzero",
    "tricycle.torch_construction": "diagflat block_diag kron tensordot vander "
    "cartesian_prod combinations empty_strided",
    "tricycle.torch_pointwise": "exp2 expm1 frac fix signbit deg2rad rad2deg logit sinc frexp "
    "xlogy heaviside atan2 arctan2 hypot logaddexp logaddexp2 copysign "
    "ldexp float_power fmax fmin lerp addcmul addcdiv",
    "tricycle.complex_tensor": "complex polar view_as_real view_as_complex",
    # complex tensors to complex_tensor's ops, real ones to the real functions
    "tricycle.complex_functions": "angle conj conj_physical real imag negative clone reciprocal "
    "sgn diag roll repeat_interleave index_select flip diagonal select chunk split swapaxes "
    "permute tensor_split hsplit vsplit unbind narrow fliplr flipud rot90 tile movedim moveaxis "
    "swapdims gather squeeze unsqueeze flatten norm transpose broadcast_to take take_along_dim "
    "masked_select diag_embed tril triu cumsum sin cos tanh sinh cosh rsqrt prod var std trace "
    "dot inner outer ger vdot dist",
    "tricycle.spectral": "stft istft",
    "tricycle.torch_special": "erf erfc erfinv lgamma digamma polygamma mvlgamma i0",
    "tricycle.special_more": "igamma igammac",
    "tricycle.torch_numeric": "gradient binomial poisson frobenius_norm nuclear_norm nextafter",
    "tricycle.torch_statistics": "std_mean var_mean aminmax cummax cummin logcumsumexp trapezoid "
    "trapz cumulative_trapezoid diff cov corrcoef renorm pdist",
    "tricycle.torch_products": "addmv addbmm baddbmm chain_matmul",
    "tricycle.nn.functional": "cosine_similarity pairwise_distance conv1d conv2d conv3d "
    "conv_transpose1d conv_transpose2d conv_transpose3d pixel_shuffle pixel_unshuffle bilinear "
    "prelu celu threshold hardshrink adaptive_avg_pool1d channel_shuffle celu_ selu_ threshold_",
    "tricycle.nn.top_level": "adaptive_max_pool1d alpha_dropout avg_pool1d batch_norm "
    "dropout_ alpha_dropout_ feature_dropout feature_dropout_ feature_alpha_dropout_ rrelu_ "
    "binary_cross_entropy_with_logits cosine_embedding_loss ctc_loss dropout embedding "
    "feature_alpha_dropout group_norm hinge_embedding_loss instance_norm kl_div layer_norm "
    "margin_ranking_loss max_pool1d max_pool2d max_pool3d poisson_nll_loss rrelu selu "
    "triplet_margin_loss",
    "tricycle.nn.native": "native_batch_norm native_layer_norm native_group_norm native_dropout "
    "native_norm norm_except_dim constant_pad_nd convolution grid_sampler grid_sampler_2d "
    "grid_sampler_3d affine_grid_generator max_pool1d_with_indices empty_permuted",
    "tricycle.nn.recurrent_functions": "rnn_tanh rnn_relu lstm gru rnn_tanh_cell rnn_relu_cell "
    "lstm_cell gru_cell",
    "tricycle.torch_arith": "acosh asinh atanh arccosh arcsinh arctanh gcd lcm floor_divide "
    "rsub positive greater greater_equal less less_equal not_equal addr "
    "detach t fill zero_",
    "tricycle.torch_put": "put index_put index_reduce unravel_index histogramdd",
    "tricycle.torch_windows": "logspace hann_window hamming_window blackman_window "
    "bartlett_window kaiser_window scalar_tensor asarray frombuffer",
    "tricycle.torch_copies": "view_copy permute_copy transpose_copy t_copy squeeze_copy "
    "unsqueeze_copy expand_copy diagonal_copy select_copy slice_copy split_copy split_with_sizes "
    "split_with_sizes_copy unbind_copy unfold_copy alias_copy detach_copy narrow_copy "
    "unsafe_chunk unsafe_split unsafe_split_with_sizes",
    "tricycle.torch_misc": "dtype layout strided memory_format contiguous_format channels_last "
    "channels_last_3d preserve_format concat newaxis is_same_size is_signed is_conj is_neg "
    "resolve_conj resolve_neg is_inference get_device typename sym_int sym_float sym_max "
    "sym_min sym_not sym_sum sym_sqrt sym_ite cond while_loop from_dlpack to_dlpack has_lapack "
    "has_mkl has_openmp has_spectral compiled_with_cxx11_abi abs_ acosh_ addmv_ arccos_ "
    "arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asinh_ atanh_ ceil_ clamp_ clamp_max_ "
    "clamp_min_ clip_ deg2rad_ detach_ erf_ erfc_ exp2_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ "
    "index_put_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ "
    "reciprocal_ resize_as_ round_ rsqrt_ sigmoid_ sinc_ square_ trunc_ xlogy_",
    "tricycle.compiler": "compile",
    "tricycle.torch_embedding": "embedding_bag embedding_renorm_",
    "tricycle.torch_segments": "segment_reduce",
    "tricycle.nn.functional_rest": "native_channel_shuffle",
    "tricycle.amp": "is_autocast_enabled set_autocast_enabled get_autocast_dtype "
    "set_autocast_dtype is_autocast_cpu_enabled set_autocast_cpu_enabled get_autocast_cpu_dtype "
    "set_autocast_cpu_dtype get_autocast_gpu_dtype set_autocast_gpu_dtype "
    "is_autocast_cache_enabled set_autocast_cache_enabled clear_autocast_cache "
    "autocast_increment_nesting autocast_decrement_nesting",
    "tricycle.torch_flags": "get_default_device is_inference_mode_enabled set_anomaly_enabled "
    "is_anomaly_enabled is_anomaly_check_nan_enabled set_warn_always is_warn_always_enabled "
    "set_flush_denormal",
}
_PUBLIC.update({n: (m, n) for m, names in _BY_MODULE.items() for n in names.split()})


def __getattr__(name: str):
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'tricycle' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    value = value if attribute is None else getattr(value, attribute)
    globals()[name] = value  # the next lookup finds it directly
    return value


class _Namespace(_types.ModuleType):
    """The package's module type: a public name that is also a submodule's (``einsum``) keeps
    naming the function when the submodule is imported (the import system would set the
    package's attribute to the submodule), as it did when this file imported it eagerly."""

    def __setattr__(self, name, value):
        if name in _PUBLIC and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Namespace


# the catalogue's modules moved to tricycle.nn; their old names still import (see _Moved)
MOVED = frozenset(
    "adaptive_pooling batch_norm conv conv_transpose diffusion encoder functional group_norm "
    "instance_norm mlm pooling recurrent sdpa unet upsample windows".split()
)


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``from tricycle.conv import Conv2d`` (the old README's import) keeps working now that
    the module is ``tricycle.nn.conv``: the old name imports the very module object, so there
    is one copy of each class (``isinstance`` holds and pickles made either way load).

    Why a finder and not one stub file per old name: sixteen stubs would fill the top of the
    package again with the catalogue this move took out of it, and a stub that re-exports
    names copies none of the private ones a user (or a pickle) may reach. The finder answers
    for ``tricycle.<old name>`` only, and imports nothing until such a name is imported. It is
    asked first, so that no other finder (an editable install of another checkout, a stale
    ``conv.py`` left by an older install) can load a second copy of a moved module."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.partition(".")
        if package != __name__ or name not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(f"{__name__}.nn.{spec.name.partition('.')[2]}")
        spec.loader_state = module.__spec__  # the import system sets __spec__ to the old name's
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state  # the module keeps its own spec


if not any(isinstance(finder, _Moved) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Moved())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


# what a star import leaves out: the dtype names and torch's all and any (they would shadow
# Python's bool, int, float, all and any), torch's device, autocast and constants, and the
# seed's layer classes; every other function and class above is in it, so the list cannot
# fall behind
_NOT_STARRED = frozenset(
    "bool uint8 int8 int16 short int int32 int64 long float float16 half float32 float64 double "
    "complex64 cfloat complex128 cdouble complex "
    "bfloat16 all any device autocast GeLU LeakyReLU LogSoftmax ReLU Softmax Swish "
    "pi e inf nan range compile newaxis".split()
)
_STARRED = [name for name, (_, attr) in _PUBLIC.items() if attr and name not in _NOT_STARRED]
__all__ = sorted(["__version__", *_STARRED])

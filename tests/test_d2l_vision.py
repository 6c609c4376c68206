"""Dive into Deep Learning (d2l-ai/d2l-en), chapter_computer-vision's PyTorch code, run cell by
cell on tricycle with ``torch`` replaced by ``tricycle`` in its text, beside the book's own
library ``d2l/torch.py`` built the same way (tests/d2l_port.py; docs/pytorch.md's promise; the
method of tests/test_d2l_cnn.py): image-augmentation (flips, ``RandomResizedCrop``,
``ColorJitter``, ``Compose``, CIFAR-10 through ``DataLoader`` into the book's ``resnet18``
trained by ``train_ch13`` with Adam), fine-tuning (an ``ImageFolder`` of hot dogs, a new
``fc`` trained ten times faster through SGD's parameter groups, ``requires_grad = False``,
``torch.split`` of the head's weight), bounding-box, anchor (``multibox_prior``, ``box_iou``,
``assign_anchor_to_bbox``, ``offset_boxes``, ``multibox_target``, ``nms``,
``multibox_detection``), ssd (``TinySSD`` trained on banana-like boxes, its detections, the
smooth-L1 and focal losses), transposed-conv (``ConvTranspose2d`` against the book's
``trans_conv`` and the convolution's matrix), fcn (a ResNet cut before its pooling, a
transposed convolution started as ``bilinear_kernel``, VOC-like segmentation through the
book's ``VOCSegDataset``) and neural-style (content, style (Gram) and total-variation losses
on a synthesized image under Adam and ``StepLR``).

The code is the book's PyTorch tab as d2l.ai shows it (``#@tab pytorch`` and ``#@tab all``
cells; ``%matplotlib inline`` dropped). The parts of ``d2l/torch.py`` the chapter saves and
calls (``resnet18`` to ``load_data_voc``, in its order) are held here as ``D2L_VISION`` and
built after tests/d2l_port.py's. A cell's last expression is printed, as a notebook shows it.
Each changed line ends in ``# port:`` and says why: sizes, batches, steps and widths shrunk;
the book's photos and data sets (downloads) replaced by small synthetic ones the test writes
(an image PIL would open is an (H, W, 3) uint8 array here, one ``read_image`` reads is a
``.npy`` file); a layer's ``weight`` taken by position (tricycle's is ``weights``, a Linear's
(in, out): documented); torch's ``x.repeat(n, 1)`` written ``tile`` (tricycle's ``repeat``
is numpy's: documented); ``try_all_gpus()``, empty without a GPU (the book's code fails then
under torch too), written ``[try_gpu()]``; the image grids of ``show_images`` not drawn
(tens of axes: seconds).

What the chapter imports and tricycle's test extra lacks is the test's (``VISION``, only what
the chapter calls): torchvision's ``transforms`` (on (H, W, 3) uint8 arrays, numpy's random
numbers: the same images under both libraries), ``datasets.CIFAR10`` (tinted 16-pixel images)
and ``ImageFolder``, ``io.read_image``, ``models.resnet18`` (test_torch_vision_tutorials'
quarter-width one) and ``models.vgg19`` (its ``features`` at a sixteenth of the widths), and
pandas' ``read_csv`` for the bananas' labels.

Each section runs under torch (skipped without it), then under tricycle, seeded, on the CPU
and on one thread; both print the same lines (numbers and documented reprs aside). The anchor
section's printed numbers are torch's, its class labels, masks and detections exactly and its
offsets to float32's rounding, and so are those of random boxes and scores; the ResNet under
Adam and ``TinySSD`` learn (their drawn losses fall) and the synthesized image's loss falls;
with torch's weights (``nn.from_torch``) the book's ResNet, the stand-in ResNet-18,
``TinySSD``, the FCN and the style network give torch's outputs and gradients. What the
chapter needed of the library: ``torch.argsort(x, dim=, descending=)`` (``nms``; tricycle/
ops.py, tests/test_torch_sort.py), batch norm's keyword ``bias`` and its repr's ``bias=``
(torch's; tricycle/nn/batch_norm.py, tests/test_batch_norm_bias.py) and ``torch.zeros`` of
VOC's 256 ** 3 colour table made lazily zeroed, as numpy's ``zeros`` (tricycle/factories.py).
"""

# ruff: noqa: E501, W291, W293

import functools
import re
import sys

import numpy as np
import pytest

from tests import d2l_port
from tests.test_d2l_cnn import given_torchs, normal, same
from tests.test_dlwpt_part1 import same_numbers
from tests.test_torch_vision_tutorials import RESNET, host

pytestmark = [
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:Lazy modules are a new feature"),
    pytest.mark.filterwarnings("ignore:The given NumPy array is not writable"),
    # torch's, of train_ch13's metric.add(l, ...) as the book writes it
    pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar"),
    # torch's tensors' __array__ in matplotlib's imshow (torch's run only)
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"),
    # train_ch13's Animator(xlim=[1, num_epochs]) for one epoch, in both libraries
    pytest.mark.filterwarnings("ignore:Attempting to set identical low and high xlims"),
]


# d2l/torch.py (commit 23d7a5ae) from ``resnet18`` to ``load_data_voc``, in its order: the parts
# this chapter saves and calls
D2L_VISION = r'''
def resnet18(num_classes, in_channels=1):
    """A slightly modified ResNet-18 model.

    Defined in :numref:`sec_multi_gpu_concise`"""
    def resnet_block(in_channels, out_channels, num_residuals,
                     first_block=False):
        blk = []
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.append(d2l.Residual(out_channels, use_1x1conv=True,
                                        strides=2))
            else:
                blk.append(d2l.Residual(out_channels))
        return nn.Sequential(*blk)

    # This model uses a smaller convolution kernel, stride, and padding and
    # removes the max-pooling layer
    net = nn.Sequential(
        nn.Conv2d(in_channels, 8, kernel_size=3, stride=1, padding=1),  # port: widths 64 to 512 an eighth (8 to 64): seconds a step on the CPU
        nn.BatchNorm2d(8),  # port: as above
        nn.ReLU())
    net.add_module("resnet_block1", resnet_block(8, 8, 2, first_block=True))  # port: as above
    net.add_module("resnet_block2", resnet_block(8, 16, 2))  # port: as above
    net.add_module("resnet_block3", resnet_block(16, 32, 2))  # port: as above
    net.add_module("resnet_block4", resnet_block(32, 64, 2))  # port: as above
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1,1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(),
                                       nn.Linear(64, num_classes)))  # port: as above
    return net

def train_batch_ch13(net, X, y, loss, trainer, devices):
    """Train for a minibatch with multiple GPUs (defined in Chapter 13).

    Defined in :numref:`sec_image_augmentation`"""
    if isinstance(X, list):
        # Required for BERT fine-tuning (to be covered later)
        X = [x.to(devices[0]) for x in X]
    else:
        X = X.to(devices[0])
    y = y.to(devices[0])
    net.train()
    trainer.zero_grad()
    pred = net(X)
    l = loss(pred, y)
    l.sum().backward()
    trainer.step()
    train_loss_sum = l.sum()
    train_acc_sum = d2l.accuracy(pred, y)
    return train_loss_sum, train_acc_sum

def train_ch13(net, train_iter, test_iter, loss, trainer, num_epochs,
               devices=d2l.try_all_gpus()):
    """Train a model with multiple GPUs (defined in Chapter 13).

    Defined in :numref:`sec_image_augmentation`"""
    timer, num_batches = d2l.Timer(), len(train_iter)
    animator = d2l.Animator(xlabel='epoch', xlim=[1, num_epochs], ylim=[0, 1],
                            legend=['train loss', 'train acc', 'test acc'])
    net = nn.DataParallel(net, device_ids=devices).to(devices[0])
    for epoch in range(num_epochs):
        # Sum of training loss, sum of training accuracy, no. of examples,
        # no. of predictions
        metric = d2l.Accumulator(4)
        for i, (features, labels) in enumerate(train_iter):
            timer.start()
            l, acc = train_batch_ch13(
                net, features, labels, loss, trainer, devices)
            metric.add(l, acc, labels.shape[0], labels.numel())
            timer.stop()
            if (i + 1) % (num_batches // 5) == 0 or i == num_batches - 1:
                animator.add(epoch + (i + 1) / num_batches,
                             (metric[0] / metric[2], metric[1] / metric[3],
                              None))
        test_acc = d2l.evaluate_accuracy_gpu(net, test_iter)
        animator.add(epoch + 1, (None, None, test_acc))
    print(f'loss {metric[0] / metric[2]:.3f}, train acc '
          f'{metric[1] / metric[3]:.3f}, test acc {test_acc:.3f}')
    print(f'{metric[2] * num_epochs / timer.sum():.1f} examples/sec on '
          f'{str(devices)}')

d2l.DATA_HUB['hotdog'] = (d2l.DATA_URL + 'hotdog.zip',
                         'fba480ffa8aa7e0febbb511d181409f899b9baa5')

def box_corner_to_center(boxes):
    """Convert from (upper-left, lower-right) to (center, width, height).

    Defined in :numref:`sec_bbox`"""
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    cx = (x1 + x2) / 2
    cy = (y1 + y2) / 2
    w = x2 - x1
    h = y2 - y1
    boxes = d2l.stack((cx, cy, w, h), axis=-1)
    return boxes

def box_center_to_corner(boxes):
    """Convert from (center, width, height) to (upper-left, lower-right).

    Defined in :numref:`sec_bbox`"""
    cx, cy, w, h = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    x1 = cx - 0.5 * w
    y1 = cy - 0.5 * h
    x2 = cx + 0.5 * w
    y2 = cy + 0.5 * h
    boxes = d2l.stack((x1, y1, x2, y2), axis=-1)
    return boxes

def bbox_to_rect(bbox, color):
    """Convert bounding box to matplotlib format.

    Defined in :numref:`sec_bbox`"""
    # Convert the bounding box (upper-left x, upper-left y, lower-right x,
    # lower-right y) format to the matplotlib format: ((upper-left x,
    # upper-left y), width, height)
    return d2l.plt.Rectangle(
        xy=(bbox[0], bbox[1]), width=bbox[2]-bbox[0], height=bbox[3]-bbox[1],
        fill=False, edgecolor=color, linewidth=2)

def multibox_prior(data, sizes, ratios):
    """Generate anchor boxes with different shapes centered on each pixel.

    Defined in :numref:`sec_anchor`"""
    in_height, in_width = data.shape[-2:]
    device, num_sizes, num_ratios = data.device, len(sizes), len(ratios)
    boxes_per_pixel = (num_sizes + num_ratios - 1)
    size_tensor = d2l.tensor(sizes, device=device)
    ratio_tensor = d2l.tensor(ratios, device=device)
    # Offsets are required to move the anchor to the center of a pixel. Since
    # a pixel has height=1 and width=1, we choose to offset our centers by 0.5
    offset_h, offset_w = 0.5, 0.5
    steps_h = 1.0 / in_height  # Scaled steps in y axis
    steps_w = 1.0 / in_width  # Scaled steps in x axis

    # Generate all center points for the anchor boxes
    center_h = (torch.arange(in_height, device=device) + offset_h) * steps_h
    center_w = (torch.arange(in_width, device=device) + offset_w) * steps_w
    shift_y, shift_x = torch.meshgrid(center_h, center_w, indexing='ij')
    shift_y, shift_x = shift_y.reshape(-1), shift_x.reshape(-1)

    # Generate `boxes_per_pixel` number of heights and widths that are later
    # used to create anchor box corner coordinates (xmin, xmax, ymin, ymax)
    w = torch.cat((size_tensor * torch.sqrt(ratio_tensor[0]),
                   sizes[0] * torch.sqrt(ratio_tensor[1:])))\
                   * in_height / in_width  # Handle rectangular inputs
    h = torch.cat((size_tensor / torch.sqrt(ratio_tensor[0]),
                   sizes[0] / torch.sqrt(ratio_tensor[1:])))
    # Divide by 2 to get half height and half width
    anchor_manipulations = torch.stack((-w, -h, w, h)).T.tile((  # port: torch's repeat is tile (tricycle's repeat is numpy's: documented)
                                        in_height * in_width, 1)) / 2  # port: as above

    # Each center point will have `boxes_per_pixel` number of anchor boxes, so
    # generate a grid of all anchor box centers with `boxes_per_pixel` repeats
    out_grid = torch.stack([shift_x, shift_y, shift_x, shift_y],
                dim=1).repeat_interleave(boxes_per_pixel, dim=0)
    output = out_grid + anchor_manipulations
    return output.unsqueeze(0)

def show_bboxes(axes, bboxes, labels=None, colors=None):
    """Show bounding boxes.

    Defined in :numref:`sec_anchor`"""

    def make_list(obj, default_values=None):
        if obj is None:
            obj = default_values
        elif not isinstance(obj, (list, tuple)):
            obj = [obj]
        return obj

    labels = make_list(labels)
    colors = make_list(colors, ['b', 'g', 'r', 'm', 'c'])
    for i, bbox in enumerate(bboxes):
        color = colors[i % len(colors)]
        rect = d2l.bbox_to_rect(d2l.numpy(bbox), color)
        axes.add_patch(rect)
        if labels and len(labels) > i:
            text_color = 'k' if color == 'w' else 'w'
            axes.text(rect.xy[0], rect.xy[1], labels[i],
                      va='center', ha='center', fontsize=9, color=text_color,
                      bbox=dict(facecolor=color, lw=0))

def box_iou(boxes1, boxes2):
    """Compute pairwise IoU across two lists of anchor or bounding boxes.

    Defined in :numref:`sec_anchor`"""
    box_area = lambda boxes: ((boxes[:, 2] - boxes[:, 0]) *
                              (boxes[:, 3] - boxes[:, 1]))
    # Shape of `boxes1`, `boxes2`, `areas1`, `areas2`: (no. of boxes1, 4),
    # (no. of boxes2, 4), (no. of boxes1,), (no. of boxes2,)
    areas1 = box_area(boxes1)
    areas2 = box_area(boxes2)
    # Shape of `inter_upperlefts`, `inter_lowerrights`, `inters`: (no. of
    # boxes1, no. of boxes2, 2)
    inter_upperlefts = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    inter_lowerrights = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    inters = (inter_lowerrights - inter_upperlefts).clamp(min=0)
    # Shape of `inter_areas` and `union_areas`: (no. of boxes1, no. of boxes2)
    inter_areas = inters[:, :, 0] * inters[:, :, 1]
    union_areas = areas1[:, None] + areas2 - inter_areas
    return inter_areas / union_areas

def assign_anchor_to_bbox(ground_truth, anchors, device, iou_threshold=0.5):
    """Assign closest ground-truth bounding boxes to anchor boxes.

    Defined in :numref:`sec_anchor`"""
    num_anchors, num_gt_boxes = anchors.shape[0], ground_truth.shape[0]
    # Element x_ij in the i-th row and j-th column is the IoU of the anchor
    # box i and the ground-truth bounding box j
    jaccard = box_iou(anchors, ground_truth)
    # Initialize the tensor to hold the assigned ground-truth bounding box for
    # each anchor
    anchors_bbox_map = torch.full((num_anchors,), -1, dtype=torch.long,
                                  device=device)
    # Assign ground-truth bounding boxes according to the threshold
    max_ious, indices = torch.max(jaccard, dim=1)
    anc_i = torch.nonzero(max_ious >= iou_threshold).reshape(-1)
    box_j = indices[max_ious >= iou_threshold]
    anchors_bbox_map[anc_i] = box_j
    col_discard = torch.full((num_anchors,), -1)
    row_discard = torch.full((num_gt_boxes,), -1)
    for _ in range(num_gt_boxes):
        max_idx = torch.argmax(jaccard)  # Find the largest IoU
        box_idx = (max_idx % num_gt_boxes).long()
        anc_idx = (max_idx / num_gt_boxes).long()
        anchors_bbox_map[anc_idx] = box_idx
        jaccard[:, box_idx] = col_discard
        jaccard[anc_idx, :] = row_discard
    return anchors_bbox_map

def offset_boxes(anchors, assigned_bb, eps=1e-6):
    """Transform for anchor box offsets.

    Defined in :numref:`subsec_labeling-anchor-boxes`"""
    c_anc = d2l.box_corner_to_center(anchors)
    c_assigned_bb = d2l.box_corner_to_center(assigned_bb)
    offset_xy = 10 * (c_assigned_bb[:, :2] - c_anc[:, :2]) / c_anc[:, 2:]
    offset_wh = 5 * d2l.log(eps + c_assigned_bb[:, 2:] / c_anc[:, 2:])
    offset = d2l.concat([offset_xy, offset_wh], axis=1)
    return offset

def multibox_target(anchors, labels):
    """Label anchor boxes using ground-truth bounding boxes.

    Defined in :numref:`subsec_labeling-anchor-boxes`"""
    batch_size, anchors = labels.shape[0], anchors.squeeze(0)
    batch_offset, batch_mask, batch_class_labels = [], [], []
    device, num_anchors = anchors.device, anchors.shape[0]
    for i in range(batch_size):
        label = labels[i, :, :]
        anchors_bbox_map = assign_anchor_to_bbox(
            label[:, 1:], anchors, device)
        bbox_mask = ((anchors_bbox_map >= 0).float().unsqueeze(-1)).tile((  # port: torch's repeat is tile (tricycle's repeat is numpy's: documented)
            1, 4))  # port: as above
        # Initialize class labels and assigned bounding box coordinates with
        # zeros
        class_labels = torch.zeros(num_anchors, dtype=torch.long,
                                   device=device)
        assigned_bb = torch.zeros((num_anchors, 4), dtype=torch.float32,
                                  device=device)
        # Label classes of anchor boxes using their assigned ground-truth
        # bounding boxes. If an anchor box is not assigned any, we label its
        # class as background (the value remains zero)
        indices_true = torch.nonzero(anchors_bbox_map >= 0)
        bb_idx = anchors_bbox_map[indices_true]
        class_labels[indices_true] = label[bb_idx, 0].long() + 1
        assigned_bb[indices_true] = label[bb_idx, 1:]
        # Offset transformation
        offset = offset_boxes(anchors, assigned_bb) * bbox_mask
        batch_offset.append(offset.reshape(-1))
        batch_mask.append(bbox_mask.reshape(-1))
        batch_class_labels.append(class_labels)
    bbox_offset = torch.stack(batch_offset)
    bbox_mask = torch.stack(batch_mask)
    class_labels = torch.stack(batch_class_labels)
    return (bbox_offset, bbox_mask, class_labels)

def offset_inverse(anchors, offset_preds):
    """Predict bounding boxes based on anchor boxes with predicted offsets.

    Defined in :numref:`subsec_labeling-anchor-boxes`"""
    anc = d2l.box_corner_to_center(anchors)
    pred_bbox_xy = (offset_preds[:, :2] * anc[:, 2:] / 10) + anc[:, :2]
    pred_bbox_wh = d2l.exp(offset_preds[:, 2:] / 5) * anc[:, 2:]
    pred_bbox = d2l.concat((pred_bbox_xy, pred_bbox_wh), axis=1)
    predicted_bbox = d2l.box_center_to_corner(pred_bbox)
    return predicted_bbox

def nms(boxes, scores, iou_threshold):
    """Sort confidence scores of predicted bounding boxes.

    Defined in :numref:`subsec_predicting-bounding-boxes-nms`"""
    B = torch.argsort(scores, dim=-1, descending=True)
    keep = []  # Indices of predicted bounding boxes that will be kept
    while B.numel() > 0:
        i = B[0]
        keep.append(i)
        if B.numel() == 1: break
        iou = box_iou(boxes[i, :].reshape(-1, 4),
                      boxes[B[1:], :].reshape(-1, 4)).reshape(-1)
        inds = torch.nonzero(iou <= iou_threshold).reshape(-1)
        B = B[inds + 1]
    return d2l.tensor(keep, device=boxes.device)

def multibox_detection(cls_probs, offset_preds, anchors, nms_threshold=0.5,
                       pos_threshold=0.009999999):
    """Predict bounding boxes using non-maximum suppression.

    Defined in :numref:`subsec_predicting-bounding-boxes-nms`"""
    device, batch_size = cls_probs.device, cls_probs.shape[0]
    anchors = anchors.squeeze(0)
    num_classes, num_anchors = cls_probs.shape[1], cls_probs.shape[2]
    out = []
    for i in range(batch_size):
        cls_prob, offset_pred = cls_probs[i], offset_preds[i].reshape(-1, 4)
        conf, class_id = torch.max(cls_prob[1:], 0)
        predicted_bb = offset_inverse(anchors, offset_pred)
        keep = nms(predicted_bb, conf, nms_threshold)
        # Find all non-`keep` indices and set the class to background
        all_idx = torch.arange(num_anchors, dtype=torch.long, device=device)
        combined = torch.cat((keep, all_idx))
        uniques, counts = combined.unique(return_counts=True)
        non_keep = uniques[counts == 1]
        all_id_sorted = torch.cat((keep, non_keep))
        class_id[non_keep] = -1
        class_id = class_id[all_id_sorted]
        conf, predicted_bb = conf[all_id_sorted], predicted_bb[all_id_sorted]
        # Here `pos_threshold` is a threshold for positive (non-background)
        # predictions
        below_min_idx = (conf < pos_threshold)
        class_id[below_min_idx] = -1
        conf[below_min_idx] = 1 - conf[below_min_idx]
        pred_info = torch.cat((class_id.unsqueeze(1),
                               conf.unsqueeze(1),
                               predicted_bb), dim=1)
        out.append(pred_info)
    return d2l.stack(out)

d2l.DATA_HUB['banana-detection'] = (
    d2l.DATA_URL + 'banana-detection.zip',
    '5de26c8fce5ccdea9f91267273464dc968d20d72')

def read_data_bananas(is_train=True):
    """Read the banana detection dataset images and labels.

    Defined in :numref:`sec_object-detection-dataset`"""
    data_dir = os.path.join('..', 'data', 'banana-detection')  # port: no download: a small synthetic set the test wrote there
    csv_fname = os.path.join(data_dir, 'bananas_train' if is_train
                             else 'bananas_val', 'label.csv')
    csv_data = pd.read_csv(csv_fname)
    csv_data = csv_data.set_index('img_name')
    images, targets = [], []
    for img_name, target in csv_data.iterrows():
        images.append(torchvision.io.read_image(
            os.path.join(data_dir, 'bananas_train' if is_train else
                         'bananas_val', 'images', f'{img_name}')))
        # Here `target` contains (class, upper-left x, upper-left y,
        # lower-right x, lower-right y), where all the images have the same
        # banana class (index 0)
        targets.append(list(target))
    return images, torch.tensor(targets).unsqueeze(1) / 64  # port: the synthetic images are 64 pixels wide, not 256

class BananasDataset(torch.utils.data.Dataset):
    """A customized dataset to load the banana detection dataset.

    Defined in :numref:`sec_object-detection-dataset`"""
    def __init__(self, is_train):
        self.features, self.labels = read_data_bananas(is_train)
        print('read ' + str(len(self.features)) + (f' training examples' if
              is_train else f' validation examples'))

    def __getitem__(self, idx):
        return (self.features[idx].float(), self.labels[idx])

    def __len__(self):
        return len(self.features)

def load_data_bananas(batch_size):
    """Load the banana detection dataset.

    Defined in :numref:`sec_object-detection-dataset`"""
    train_iter = torch.utils.data.DataLoader(BananasDataset(is_train=True),
                                             batch_size, shuffle=True)
    val_iter = torch.utils.data.DataLoader(BananasDataset(is_train=False),
                                           batch_size)
    return train_iter, val_iter

d2l.DATA_HUB['voc2012'] = (d2l.DATA_URL + 'VOCtrainval_11-May-2012.tar',
                           '4e443f8a2eca6b1dac8a6c57641b67dd40621a49')

def read_voc_images(voc_dir, is_train=True):
    """Read all VOC feature and label images.

    Defined in :numref:`sec_semantic_segmentation`"""
    txt_fname = os.path.join(voc_dir, 'ImageSets', 'Segmentation',
                             'train.txt' if is_train else 'val.txt')
    mode = torchvision.io.image.ImageReadMode.RGB
    with open(txt_fname, 'r') as f:
        images = f.read().split()
    features, labels = [], []
    for i, fname in enumerate(images):
        features.append(torchvision.io.read_image(os.path.join(
            voc_dir, 'JPEGImages', f'{fname}.jpg')))
        labels.append(torchvision.io.read_image(os.path.join(
            voc_dir, 'SegmentationClass' ,f'{fname}.png'), mode))
    return features, labels

VOC_COLORMAP = [[0, 0, 0], [128, 0, 0], [0, 128, 0], [128, 128, 0],
                [0, 0, 128], [128, 0, 128], [0, 128, 128], [128, 128, 128],
                [64, 0, 0], [192, 0, 0], [64, 128, 0], [192, 128, 0],
                [64, 0, 128], [192, 0, 128], [64, 128, 128], [192, 128, 128],
                [0, 64, 0], [128, 64, 0], [0, 192, 0], [128, 192, 0],
                [0, 64, 128]]

VOC_CLASSES = ['background', 'aeroplane', 'bicycle', 'bird', 'boat',
               'bottle', 'bus', 'car', 'cat', 'chair', 'cow',
               'diningtable', 'dog', 'horse', 'motorbike', 'person',
               'potted plant', 'sheep', 'sofa', 'train', 'tv/monitor']

def voc_colormap2label():
    """Build the mapping from RGB to class indices for VOC labels.

    Defined in :numref:`sec_semantic_segmentation`"""
    colormap2label = torch.zeros(256 ** 3, dtype=torch.long)
    for i, colormap in enumerate(VOC_COLORMAP):
        colormap2label[
            (colormap[0] * 256 + colormap[1]) * 256 + colormap[2]] = i
    return colormap2label

def voc_label_indices(colormap, colormap2label):
    """Map any RGB values in VOC labels to their class indices.

    Defined in :numref:`sec_semantic_segmentation`"""
    colormap = colormap.permute(1, 2, 0).numpy().astype('int32')
    idx = ((colormap[:, :, 0] * 256 + colormap[:, :, 1]) * 256
           + colormap[:, :, 2])
    return colormap2label[idx]

def voc_rand_crop(feature, label, height, width):
    """Randomly crop both feature and label images.

    Defined in :numref:`sec_semantic_segmentation`"""
    rect = torchvision.transforms.RandomCrop.get_params(
        feature, (height, width))
    feature = torchvision.transforms.functional.crop(feature, *rect)
    label = torchvision.transforms.functional.crop(label, *rect)
    return feature, label

class VOCSegDataset(torch.utils.data.Dataset):
    """A customized dataset to load the VOC dataset.

    Defined in :numref:`sec_semantic_segmentation`"""

    def __init__(self, is_train, crop_size, voc_dir):
        self.transform = torchvision.transforms.Normalize(
            mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
        self.crop_size = crop_size
        features, labels = read_voc_images(voc_dir, is_train=is_train)
        self.features = [self.normalize_image(feature)
                         for feature in self.filter(features)]
        self.labels = self.filter(labels)
        self.colormap2label = voc_colormap2label()
        print('read ' + str(len(self.features)) + ' examples')

    def normalize_image(self, img):
        return self.transform(img.float() / 255)

    def filter(self, imgs):
        return [img for img in imgs if (
            img.shape[1] >= self.crop_size[0] and
            img.shape[2] >= self.crop_size[1])]

    def __getitem__(self, idx):
        feature, label = voc_rand_crop(self.features[idx], self.labels[idx],
                                       *self.crop_size)
        return (feature, voc_label_indices(label, self.colormap2label))

    def __len__(self):
        return len(self.features)

def load_data_voc(batch_size, crop_size):
    """Load the VOC semantic segmentation dataset.

    Defined in :numref:`sec_semantic_segmentation`"""
    voc_dir = os.path.join('..', 'data', os.path.join(  # port: no download: a small synthetic set the test wrote there
        'VOCdevkit', 'VOC2012'))
    num_workers = d2l.get_dataloader_workers()
    train_iter = torch.utils.data.DataLoader(
        VOCSegDataset(True, crop_size, voc_dir), batch_size,
        shuffle=True, drop_last=True, num_workers=num_workers)
    test_iter = torch.utils.data.DataLoader(
        VOCSegDataset(False, crop_size, voc_dir), batch_size,
        drop_last=True, num_workers=num_workers)
    return train_iter, test_iter
'''


IMAGE_AUGMENTATION = r'''
from d2l import torch as d2l
import torch
import torchvision
from torch import nn
# %%
d2l.set_figsize()
img = d2l.np.load('../img/cat1.npy')  # port: the book's photo (PIL, not in tricycle's test extra): a synthetic (H, W, 3) uint8 image the test wrote
d2l.plt.imshow(img);
# %%
applied = []  # port: each augmentation's images kept, not drawn (below)
def apply(img, aug, num_rows=2, num_cols=4, scale=1.5):
    Y = [aug(img) for _ in range(num_rows * num_cols)]
    applied.append(Y)  # port: d2l.show_images(Y, num_rows, num_cols, scale=scale) not drawn (8 axes a call: seconds)
# %%
apply(img, torchvision.transforms.RandomHorizontalFlip())
# %%
apply(img, torchvision.transforms.RandomVerticalFlip())
# %%
shape_aug = torchvision.transforms.RandomResizedCrop(
    (20, 20), scale=(0.1, 1), ratio=(0.5, 2))  # port: 200 pixels: 20 (the synthetic image is 40x50)
apply(img, shape_aug)
# %%
apply(img, torchvision.transforms.ColorJitter(
    brightness=0.5, contrast=0, saturation=0, hue=0))
# %%
apply(img, torchvision.transforms.ColorJitter(
    brightness=0, contrast=0, saturation=0, hue=0.5))
# %%
color_aug = torchvision.transforms.ColorJitter(
    brightness=0.5, contrast=0.5, saturation=0.5, hue=0.5)
apply(img, color_aug)
# %%
augs = torchvision.transforms.Compose([
    torchvision.transforms.RandomHorizontalFlip(), color_aug, shape_aug])
apply(img, augs)
# %%
all_images = torchvision.datasets.CIFAR10(train=True, root="../data",
                                          download=True)
shown = [all_images[i][0] for i in range(20)]  # port: d2l.show_images(..., 4, 8, scale=0.8) of 32 not drawn (32 axes: seconds); the stand-in holds 20
# %%
train_augs = torchvision.transforms.Compose([
     torchvision.transforms.RandomHorizontalFlip(),
     torchvision.transforms.ToTensor()])

test_augs = torchvision.transforms.Compose([
     torchvision.transforms.ToTensor()])
# %%
def load_cifar10(is_train, augs, batch_size):
    dataset = torchvision.datasets.CIFAR10(root="../data", train=is_train,
                                           transform=augs, download=True)
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=batch_size,
                    shuffle=is_train, num_workers=d2l.get_dataloader_workers())
    return dataloader
# %%
#@save
def train_batch_ch13(net, X, y, loss, trainer, devices):
    """Train for a minibatch with multiple GPUs (defined in Chapter 13)."""
    if isinstance(X, list):
        # Required for BERT fine-tuning (to be covered later)
        X = [x.to(devices[0]) for x in X]
    else:
        X = X.to(devices[0])
    y = y.to(devices[0])
    net.train()
    trainer.zero_grad()
    pred = net(X)
    l = loss(pred, y)
    l.sum().backward()
    trainer.step()
    train_loss_sum = l.sum()
    train_acc_sum = d2l.accuracy(pred, y)
    return train_loss_sum, train_acc_sum
# %%
#@save
def train_ch13(net, train_iter, test_iter, loss, trainer, num_epochs,
               devices=d2l.try_all_gpus()):
    """Train a model with multiple GPUs (defined in Chapter 13)."""
    timer, num_batches = d2l.Timer(), len(train_iter)
    animator = d2l.Animator(xlabel='epoch', xlim=[1, num_epochs], ylim=[0, 1],
                            legend=['train loss', 'train acc', 'test acc'])
    net = nn.DataParallel(net, device_ids=devices).to(devices[0])
    for epoch in range(num_epochs):
        # Sum of training loss, sum of training accuracy, no. of examples,
        # no. of predictions
        metric = d2l.Accumulator(4)
        for i, (features, labels) in enumerate(train_iter):
            timer.start()
            l, acc = train_batch_ch13(
                net, features, labels, loss, trainer, devices)
            metric.add(l, acc, labels.shape[0], labels.numel())
            timer.stop()
            if (i + 1) % (num_batches // 5) == 0 or i == num_batches - 1:
                animator.add(epoch + (i + 1) / num_batches,
                             (metric[0] / metric[2], metric[1] / metric[3],
                              None))
        test_acc = d2l.evaluate_accuracy_gpu(net, test_iter)
        animator.add(epoch + 1, (None, None, test_acc))
    print(f'loss {metric[0] / metric[2]:.3f}, train acc '
          f'{metric[1] / metric[3]:.3f}, test acc {test_acc:.3f}')
    print(f'{metric[2] * num_epochs / timer.sum():.1f} examples/sec on '
          f'{str(devices)}')
# %%
batch_size, devices, net = 4, [d2l.try_gpu()], d2l.resnet18(10, 3)  # port: batches of 256: 4; try_all_gpus() is [] without a GPU (the book's fails then under torch too): try_gpu's CPU
net.apply(d2l.init_cnn)

def train_with_data_aug(train_augs, test_augs, net, lr=0.001):
    train_iter = load_cifar10(True, train_augs, batch_size)
    test_iter = load_cifar10(False, test_augs, batch_size)
    loss = nn.CrossEntropyLoss(reduction="none")
    trainer = torch.optim.Adam(net.parameters(), lr=lr)
    net(next(iter(train_iter))[0])
    train_ch13(net, train_iter, test_iter, loss, trainer, 2, devices)  # port: 10 epochs: 2
# %%
train_with_data_aug(train_augs, test_augs, net)
'''


FINE_TUNING = r"""
from d2l import torch as d2l
from torch import nn
import torch
import torchvision
import os
# %%
#@save
d2l.DATA_HUB['hotdog'] = (d2l.DATA_URL + 'hotdog.zip', 
                         'fba480ffa8aa7e0febbb511d181409f899b9baa5')

data_dir = os.path.join('..', 'data', 'hotdog')  # port: no download: a small synthetic set the test wrote there
# %%
train_imgs = torchvision.datasets.ImageFolder(os.path.join(data_dir, 'train'))
test_imgs = torchvision.datasets.ImageFolder(os.path.join(data_dir, 'test'))
# %%
hotdogs = [train_imgs[i][0] for i in range(8)]
not_hotdogs = [train_imgs[-i - 1][0] for i in range(8)]
shown = hotdogs + not_hotdogs  # port: d2l.show_images(..., 2, 8, scale=1.4) not drawn (16 axes: seconds)
# %%
# Specify the means and standard deviations of the three RGB channels to
# standardize each channel
normalize = torchvision.transforms.Normalize(
    [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])

train_augs = torchvision.transforms.Compose([
    torchvision.transforms.RandomResizedCrop(32),  # port: 224 pixels: 32
    torchvision.transforms.RandomHorizontalFlip(),
    torchvision.transforms.ToTensor(),
    normalize])

test_augs = torchvision.transforms.Compose([
    torchvision.transforms.Resize([36, 36]),  # port: 256 pixels: 36
    torchvision.transforms.CenterCrop(32),  # port: 224 pixels: 32
    torchvision.transforms.ToTensor(),
    normalize])
# %%
pretrained_net = torchvision.models.resnet18(pretrained=True)
# %%
pretrained_net.fc
# %%
finetune_net = torchvision.models.resnet18(pretrained=True)
finetune_net.fc = nn.Linear(finetune_net.fc.in_features, 2)
nn.init.xavier_uniform_(next(finetune_net.fc.parameters()));  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# %%
# If `param_group=True`, the model parameters in the output layer will be
# updated using a learning rate ten times greater
def train_fine_tuning(net, learning_rate, batch_size=4, num_epochs=1,  # port: batches of 128 for 5 epochs: 4 for 1
                      param_group=True):
    train_iter = torch.utils.data.DataLoader(torchvision.datasets.ImageFolder(
        os.path.join(data_dir, 'train'), transform=train_augs),
        batch_size=batch_size, shuffle=True)
    test_iter = torch.utils.data.DataLoader(torchvision.datasets.ImageFolder(
        os.path.join(data_dir, 'test'), transform=test_augs),
        batch_size=batch_size)
    devices = [d2l.try_gpu()]  # port: try_all_gpus() is [] without a GPU (the book's fails then under torch too): try_gpu's CPU
    loss = nn.CrossEntropyLoss(reduction="none")
    if param_group:
        params_1x = [param for name, param in net.named_parameters()
             if name not in ["fc.weight", "fc.weights", "fc.bias"]]  # port: tricycle's Linear names its weight weights (documented)
        trainer = torch.optim.SGD([{'params': params_1x},
                                   {'params': net.fc.parameters(),
                                    'lr': learning_rate * 10}],
                                lr=learning_rate, weight_decay=0.001)
    else:
        trainer = torch.optim.SGD(net.parameters(), lr=learning_rate,
                                  weight_decay=0.001)    
    d2l.train_ch13(net, train_iter, test_iter, loss, trainer, num_epochs,
                   devices)
# %%
train_fine_tuning(finetune_net, 5e-5)
# %%
scratch_net = torchvision.models.resnet18()
scratch_net.fc = nn.Linear(scratch_net.fc.in_features, 2)
train_fine_tuning(scratch_net, 5e-4, param_group=False)
# %%
for param in finetune_net.parameters():
    param.requires_grad = False
# %%
weight = pretrained_net.fc.weight if hasattr(pretrained_net.fc, 'weight') else pretrained_net.fc.weights.T  # port: tricycle's Linear holds weights (in, out) (documented): torch's (out, in) view of them
hotdog_w = torch.split(weight.data, 1, dim=0)[934]
hotdog_w.shape
"""


BOUNDING_BOX = r'''
from d2l import torch as d2l
import torch
# %%
d2l.set_figsize()
img = d2l.np.load('../img/catdog.npy')  # port: the book's photo: a synthetic (H, W, 3) uint8 image the test wrote (plt.imread's layout)
d2l.plt.imshow(img);
# %%
#@save
def box_corner_to_center(boxes):
    """Convert from (upper-left, lower-right) to (center, width, height)."""
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    cx = (x1 + x2) / 2
    cy = (y1 + y2) / 2
    w = x2 - x1
    h = y2 - y1
    boxes = d2l.stack((cx, cy, w, h), axis=-1)
    return boxes

#@save
def box_center_to_corner(boxes):
    """Convert from (center, width, height) to (upper-left, lower-right)."""
    cx, cy, w, h = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    x1 = cx - 0.5 * w
    y1 = cy - 0.5 * h
    x2 = cx + 0.5 * w
    y2 = cy + 0.5 * h
    boxes = d2l.stack((x1, y1, x2, y2), axis=-1)
    return boxes
# %%
# Here `bbox` is the abbreviation for bounding box
dog_bbox, cat_bbox = [60.0, 45.0, 378.0, 516.0], [400.0, 112.0, 655.0, 493.0]
# %%
boxes = d2l.tensor((dog_bbox, cat_bbox))
box_center_to_corner(box_corner_to_center(boxes)) == boxes
# %%
#@save
def bbox_to_rect(bbox, color):
    """Convert bounding box to matplotlib format."""
    # Convert the bounding box (upper-left x, upper-left y, lower-right x,
    # lower-right y) format to the matplotlib format: ((upper-left x,
    # upper-left y), width, height)
    return d2l.plt.Rectangle(
        xy=(bbox[0], bbox[1]), width=bbox[2]-bbox[0], height=bbox[3]-bbox[1],
        fill=False, edgecolor=color, linewidth=2)
# %%
fig = d2l.plt.imshow(img)
fig.axes.add_patch(bbox_to_rect(dog_bbox, 'blue'))
fig.axes.add_patch(bbox_to_rect(cat_bbox, 'red'));
'''


ANCHOR = r'''
from d2l import torch as d2l
import torch

torch.set_printoptions(2)  # Simplify printing accuracy
# %%
#@save
def multibox_prior(data, sizes, ratios):
    """Generate anchor boxes with different shapes centered on each pixel."""
    in_height, in_width = data.shape[-2:]
    device, num_sizes, num_ratios = data.device, len(sizes), len(ratios)
    boxes_per_pixel = (num_sizes + num_ratios - 1)
    size_tensor = d2l.tensor(sizes, device=device)
    ratio_tensor = d2l.tensor(ratios, device=device)
    # Offsets are required to move the anchor to the center of a pixel. Since
    # a pixel has height=1 and width=1, we choose to offset our centers by 0.5
    offset_h, offset_w = 0.5, 0.5
    steps_h = 1.0 / in_height  # Scaled steps in y axis
    steps_w = 1.0 / in_width  # Scaled steps in x axis

    # Generate all center points for the anchor boxes
    center_h = (torch.arange(in_height, device=device) + offset_h) * steps_h
    center_w = (torch.arange(in_width, device=device) + offset_w) * steps_w
    shift_y, shift_x = torch.meshgrid(center_h, center_w, indexing='ij')
    shift_y, shift_x = shift_y.reshape(-1), shift_x.reshape(-1)

    # Generate `boxes_per_pixel` number of heights and widths that are later
    # used to create anchor box corner coordinates (xmin, xmax, ymin, ymax)
    w = torch.cat((size_tensor * torch.sqrt(ratio_tensor[0]),
                   sizes[0] * torch.sqrt(ratio_tensor[1:])))\
                   * in_height / in_width  # Handle rectangular inputs
    h = torch.cat((size_tensor / torch.sqrt(ratio_tensor[0]),
                   sizes[0] / torch.sqrt(ratio_tensor[1:])))
    # Divide by 2 to get half height and half width
    anchor_manipulations = torch.stack((-w, -h, w, h)).T.tile((  # port: torch's repeat is tile (tricycle's repeat is numpy's: documented)
                                        in_height * in_width, 1)) / 2  # port: as above

    # Each center point will have `boxes_per_pixel` number of anchor boxes, so
    # generate a grid of all anchor box centers with `boxes_per_pixel` repeats
    out_grid = torch.stack([shift_x, shift_y, shift_x, shift_y],
                dim=1).repeat_interleave(boxes_per_pixel, dim=0)
    output = out_grid + anchor_manipulations
    return output.unsqueeze(0)
# %%
img = d2l.np.load('../img/catdog.npy')  # port: the book's photo: a synthetic (H, W, 3) uint8 image the test wrote (plt.imread's layout)
h, w = img.shape[:2]

print(h, w)
X = torch.rand(size=(1, 3, h, w))  # Construct input data
Y = multibox_prior(X, sizes=[0.75, 0.5, 0.25], ratios=[1, 2, 0.5])
Y.shape
# %%
boxes = Y.reshape(h, w, 5, 4)
boxes[250, 250, 0, :]
# %%
#@save
def show_bboxes(axes, bboxes, labels=None, colors=None):
    """Show bounding boxes."""

    def make_list(obj, default_values=None):
        if obj is None:
            obj = default_values
        elif not isinstance(obj, (list, tuple)):
            obj = [obj]
        return obj

    labels = make_list(labels)
    colors = make_list(colors, ['b', 'g', 'r', 'm', 'c'])
    for i, bbox in enumerate(bboxes):
        color = colors[i % len(colors)]
        rect = d2l.bbox_to_rect(d2l.numpy(bbox), color)
        axes.add_patch(rect)
        if labels and len(labels) > i:
            text_color = 'k' if color == 'w' else 'w'
            axes.text(rect.xy[0], rect.xy[1], labels[i],
                      va='center', ha='center', fontsize=9, color=text_color,
                      bbox=dict(facecolor=color, lw=0))
# %%
d2l.set_figsize()
bbox_scale = d2l.tensor((w, h, w, h))
fig = d2l.plt.imshow(img)
show_bboxes(fig.axes, boxes[250, 250, :, :] * bbox_scale,
            ['s=0.75, r=1', 's=0.5, r=1', 's=0.25, r=1', 's=0.75, r=2',
             's=0.75, r=0.5'])
# %%
#@save
def box_iou(boxes1, boxes2):
    """Compute pairwise IoU across two lists of anchor or bounding boxes."""
    box_area = lambda boxes: ((boxes[:, 2] - boxes[:, 0]) *
                              (boxes[:, 3] - boxes[:, 1]))
    # Shape of `boxes1`, `boxes2`, `areas1`, `areas2`: (no. of boxes1, 4),
    # (no. of boxes2, 4), (no. of boxes1,), (no. of boxes2,)
    areas1 = box_area(boxes1)
    areas2 = box_area(boxes2)
    # Shape of `inter_upperlefts`, `inter_lowerrights`, `inters`: (no. of
    # boxes1, no. of boxes2, 2)
    inter_upperlefts = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    inter_lowerrights = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    inters = (inter_lowerrights - inter_upperlefts).clamp(min=0)
    # Shape of `inter_areas` and `union_areas`: (no. of boxes1, no. of boxes2)
    inter_areas = inters[:, :, 0] * inters[:, :, 1]
    union_areas = areas1[:, None] + areas2 - inter_areas
    return inter_areas / union_areas
# %%
#@save
def assign_anchor_to_bbox(ground_truth, anchors, device, iou_threshold=0.5):
    """Assign closest ground-truth bounding boxes to anchor boxes."""
    num_anchors, num_gt_boxes = anchors.shape[0], ground_truth.shape[0]
    # Element x_ij in the i-th row and j-th column is the IoU of the anchor
    # box i and the ground-truth bounding box j
    jaccard = box_iou(anchors, ground_truth)
    # Initialize the tensor to hold the assigned ground-truth bounding box for
    # each anchor
    anchors_bbox_map = torch.full((num_anchors,), -1, dtype=torch.long,
                                  device=device)
    # Assign ground-truth bounding boxes according to the threshold
    max_ious, indices = torch.max(jaccard, dim=1)
    anc_i = torch.nonzero(max_ious >= iou_threshold).reshape(-1)
    box_j = indices[max_ious >= iou_threshold]
    anchors_bbox_map[anc_i] = box_j
    col_discard = torch.full((num_anchors,), -1)
    row_discard = torch.full((num_gt_boxes,), -1)
    for _ in range(num_gt_boxes):
        max_idx = torch.argmax(jaccard)  # Find the largest IoU
        box_idx = (max_idx % num_gt_boxes).long()
        anc_idx = (max_idx / num_gt_boxes).long()
        anchors_bbox_map[anc_idx] = box_idx
        jaccard[:, box_idx] = col_discard
        jaccard[anc_idx, :] = row_discard
    return anchors_bbox_map
# %%
#@save
def offset_boxes(anchors, assigned_bb, eps=1e-6):
    """Transform for anchor box offsets."""
    c_anc = d2l.box_corner_to_center(anchors)
    c_assigned_bb = d2l.box_corner_to_center(assigned_bb)
    offset_xy = 10 * (c_assigned_bb[:, :2] - c_anc[:, :2]) / c_anc[:, 2:]
    offset_wh = 5 * d2l.log(eps + c_assigned_bb[:, 2:] / c_anc[:, 2:])
    offset = d2l.concat([offset_xy, offset_wh], axis=1)
    return offset
# %%
#@save
def multibox_target(anchors, labels):
    """Label anchor boxes using ground-truth bounding boxes."""
    batch_size, anchors = labels.shape[0], anchors.squeeze(0)
    batch_offset, batch_mask, batch_class_labels = [], [], []
    device, num_anchors = anchors.device, anchors.shape[0]
    for i in range(batch_size):
        label = labels[i, :, :]
        anchors_bbox_map = assign_anchor_to_bbox(
            label[:, 1:], anchors, device)
        bbox_mask = ((anchors_bbox_map >= 0).float().unsqueeze(-1)).tile((  # port: torch's repeat is tile (tricycle's repeat is numpy's: documented)
            1, 4))  # port: as above
        # Initialize class labels and assigned bounding box coordinates with
        # zeros
        class_labels = torch.zeros(num_anchors, dtype=torch.long,
                                   device=device)
        assigned_bb = torch.zeros((num_anchors, 4), dtype=torch.float32,
                                  device=device)
        # Label classes of anchor boxes using their assigned ground-truth
        # bounding boxes. If an anchor box is not assigned any, we label its
        # class as background (the value remains zero)
        indices_true = torch.nonzero(anchors_bbox_map >= 0)
        bb_idx = anchors_bbox_map[indices_true]
        class_labels[indices_true] = label[bb_idx, 0].long() + 1
        assigned_bb[indices_true] = label[bb_idx, 1:]
        # Offset transformation
        offset = offset_boxes(anchors, assigned_bb) * bbox_mask
        batch_offset.append(offset.reshape(-1))
        batch_mask.append(bbox_mask.reshape(-1))
        batch_class_labels.append(class_labels)
    bbox_offset = torch.stack(batch_offset)
    bbox_mask = torch.stack(batch_mask)
    class_labels = torch.stack(batch_class_labels)
    return (bbox_offset, bbox_mask, class_labels)
# %%
ground_truth = d2l.tensor([[0, 0.1, 0.08, 0.52, 0.92],
                         [1, 0.55, 0.2, 0.9, 0.88]])
anchors = d2l.tensor([[0, 0.1, 0.2, 0.3], [0.15, 0.2, 0.4, 0.4],
                    [0.63, 0.05, 0.88, 0.98], [0.66, 0.45, 0.8, 0.8],
                    [0.57, 0.3, 0.92, 0.9]])

fig = d2l.plt.imshow(img)
show_bboxes(fig.axes, ground_truth[:, 1:] * bbox_scale, ['dog', 'cat'], 'k')
show_bboxes(fig.axes, anchors * bbox_scale, ['0', '1', '2', '3', '4']);
# %%
labels = multibox_target(anchors.unsqueeze(dim=0),
                         ground_truth.unsqueeze(dim=0))
# %%
labels[2]
# %%
labels[1]
# %%
labels[0]
# %%
#@save
def offset_inverse(anchors, offset_preds):
    """Predict bounding boxes based on anchor boxes with predicted offsets."""
    anc = d2l.box_corner_to_center(anchors)
    pred_bbox_xy = (offset_preds[:, :2] * anc[:, 2:] / 10) + anc[:, :2]
    pred_bbox_wh = d2l.exp(offset_preds[:, 2:] / 5) * anc[:, 2:]
    pred_bbox = d2l.concat((pred_bbox_xy, pred_bbox_wh), axis=1)
    predicted_bbox = d2l.box_center_to_corner(pred_bbox)
    return predicted_bbox
# %%
#@save
def nms(boxes, scores, iou_threshold):
    """Sort confidence scores of predicted bounding boxes."""
    B = torch.argsort(scores, dim=-1, descending=True)
    keep = []  # Indices of predicted bounding boxes that will be kept
    while B.numel() > 0:
        i = B[0]
        keep.append(i)
        if B.numel() == 1: break
        iou = box_iou(boxes[i, :].reshape(-1, 4),
                      boxes[B[1:], :].reshape(-1, 4)).reshape(-1)
        inds = torch.nonzero(iou <= iou_threshold).reshape(-1)
        B = B[inds + 1]
    return d2l.tensor(keep, device=boxes.device)
# %%
#@save
def multibox_detection(cls_probs, offset_preds, anchors, nms_threshold=0.5,
                       pos_threshold=0.009999999):
    """Predict bounding boxes using non-maximum suppression."""
    device, batch_size = cls_probs.device, cls_probs.shape[0]
    anchors = anchors.squeeze(0)
    num_classes, num_anchors = cls_probs.shape[1], cls_probs.shape[2]
    out = []
    for i in range(batch_size):
        cls_prob, offset_pred = cls_probs[i], offset_preds[i].reshape(-1, 4)
        conf, class_id = torch.max(cls_prob[1:], 0)
        predicted_bb = offset_inverse(anchors, offset_pred)
        keep = nms(predicted_bb, conf, nms_threshold)
        # Find all non-`keep` indices and set the class to background
        all_idx = torch.arange(num_anchors, dtype=torch.long, device=device)
        combined = torch.cat((keep, all_idx))
        uniques, counts = combined.unique(return_counts=True)
        non_keep = uniques[counts == 1]
        all_id_sorted = torch.cat((keep, non_keep))
        class_id[non_keep] = -1
        class_id = class_id[all_id_sorted]
        conf, predicted_bb = conf[all_id_sorted], predicted_bb[all_id_sorted]
        # Here `pos_threshold` is a threshold for positive (non-background)
        # predictions
        below_min_idx = (conf < pos_threshold)
        class_id[below_min_idx] = -1
        conf[below_min_idx] = 1 - conf[below_min_idx]
        pred_info = torch.cat((class_id.unsqueeze(1),
                               conf.unsqueeze(1),
                               predicted_bb), dim=1)
        out.append(pred_info)
    return d2l.stack(out)
# %%
anchors = d2l.tensor([[0.1, 0.08, 0.52, 0.92], [0.08, 0.2, 0.56, 0.95],
                      [0.15, 0.3, 0.62, 0.91], [0.55, 0.2, 0.9, 0.88]])
offset_preds = d2l.tensor([0] * d2l.size(anchors))
cls_probs = d2l.tensor([[0] * 4,  # Predicted background likelihood 
                      [0.9, 0.8, 0.7, 0.1],  # Predicted dog likelihood 
                      [0.1, 0.2, 0.3, 0.9]])  # Predicted cat likelihood
# %%
fig = d2l.plt.imshow(img)
show_bboxes(fig.axes, anchors * bbox_scale,
            ['dog=0.9', 'dog=0.8', 'dog=0.7', 'cat=0.9'])
# %%
output = multibox_detection(cls_probs.unsqueeze(dim=0),
                            offset_preds.unsqueeze(dim=0),
                            anchors.unsqueeze(dim=0),
                            nms_threshold=0.5)
output
# %%
fig = d2l.plt.imshow(img)
for i in d2l.numpy(output[0]):
    if i[0] == -1:
        continue
    label = ('dog=', 'cat=')[int(i[0])] + str(i[1])
    show_bboxes(fig.axes, [d2l.tensor(i[2:]) * bbox_scale], label)
'''


SSD = r"""
from d2l import torch as d2l
import torch
import torchvision
from torch import nn
from torch.nn import functional as F

def cls_predictor(num_inputs, num_anchors, num_classes):
    return nn.Conv2d(num_inputs, num_anchors * (num_classes + 1),
                     kernel_size=3, padding=1)
# %%
def bbox_predictor(num_inputs, num_anchors):
    return nn.Conv2d(num_inputs, num_anchors * 4, kernel_size=3, padding=1)
# %%
def forward(x, block):
    return block(x)

Y1 = forward(torch.zeros((2, 8, 20, 20)), cls_predictor(8, 5, 10))
Y2 = forward(torch.zeros((2, 16, 10, 10)), cls_predictor(16, 3, 10))
Y1.shape, Y2.shape
# %%
def flatten_pred(pred):
    return torch.flatten(pred.permute(0, 2, 3, 1), start_dim=1)

def concat_preds(preds):
    return torch.cat([flatten_pred(p) for p in preds], dim=1)
# %%
concat_preds([Y1, Y2]).shape
# %%
def down_sample_blk(in_channels, out_channels):
    blk = []
    for _ in range(2):
        blk.append(nn.Conv2d(in_channels, out_channels,
                             kernel_size=3, padding=1))
        blk.append(nn.BatchNorm2d(out_channels))
        blk.append(nn.ReLU())
        in_channels = out_channels
    blk.append(nn.MaxPool2d(2))
    return nn.Sequential(*blk)
# %%
forward(torch.zeros((2, 3, 20, 20)), down_sample_blk(3, 10)).shape
# %%
def base_net():
    blk = []
    num_filters = [3, 16, 32, 64]
    for i in range(len(num_filters) - 1):
        blk.append(down_sample_blk(num_filters[i], num_filters[i+1]))
    return nn.Sequential(*blk)

forward(torch.zeros((2, 3, 64, 64)), base_net()).shape  # port: 256 pixels: 64
# %%
def get_blk(i):
    if i == 0:
        blk = base_net()
    elif i == 1:
        blk = down_sample_blk(64, 128)
    elif i == 4:
        blk = nn.AdaptiveMaxPool2d((1,1))
    else:
        blk = down_sample_blk(128, 128)
    return blk
# %%
def blk_forward(X, blk, size, ratio, cls_predictor, bbox_predictor):
    Y = blk(X)
    anchors = d2l.multibox_prior(Y, sizes=size, ratios=ratio)
    cls_preds = cls_predictor(Y)
    bbox_preds = bbox_predictor(Y)
    return (Y, anchors, cls_preds, bbox_preds)
# %%
sizes = [[0.2, 0.272], [0.37, 0.447], [0.54, 0.619], [0.71, 0.79],
         [0.88, 0.961]]
ratios = [[1, 2, 0.5]] * 5
num_anchors = len(sizes[0]) + len(ratios[0]) - 1
# %%
class TinySSD(nn.Module):
    def __init__(self, num_classes, **kwargs):
        super(TinySSD, self).__init__(**kwargs)
        self.num_classes = num_classes
        idx_to_in_channels = [64, 128, 128, 128, 128]
        for i in range(5):
            # Equivalent to the assignment statement `self.blk_i = get_blk(i)`
            setattr(self, f'blk_{i}', get_blk(i))
            setattr(self, f'cls_{i}', cls_predictor(idx_to_in_channels[i],
                                                    num_anchors, num_classes))
            setattr(self, f'bbox_{i}', bbox_predictor(idx_to_in_channels[i],
                                                      num_anchors))

    def forward(self, X):
        anchors, cls_preds, bbox_preds = [None] * 5, [None] * 5, [None] * 5
        for i in range(5):
            # Here `getattr(self, 'blk_%d' % i)` accesses `self.blk_i`
            X, anchors[i], cls_preds[i], bbox_preds[i] = blk_forward(
                X, getattr(self, f'blk_{i}'), sizes[i], ratios[i],
                getattr(self, f'cls_{i}'), getattr(self, f'bbox_{i}'))
        anchors = torch.cat(anchors, dim=1)
        cls_preds = concat_preds(cls_preds)
        cls_preds = cls_preds.reshape(
            cls_preds.shape[0], -1, self.num_classes + 1)
        bbox_preds = concat_preds(bbox_preds)
        return anchors, cls_preds, bbox_preds
# %%
net = TinySSD(num_classes=1)
X = torch.zeros((2, 3, 64, 64))  # port: 32 images of 256 pixels: 2 of 64
anchors, cls_preds, bbox_preds = net(X)

print('output anchors:', anchors.shape)
print('output class preds:', cls_preds.shape)
print('output bbox preds:', bbox_preds.shape)
# %%
batch_size = 4  # port: 32: 4
train_iter, _ = d2l.load_data_bananas(batch_size)
# %%
device, net = d2l.try_gpu(), TinySSD(num_classes=1)
trainer = torch.optim.SGD(net.parameters(), lr=0.2, weight_decay=5e-4)
# %%
cls_loss = nn.CrossEntropyLoss(reduction='none')
bbox_loss = nn.L1Loss(reduction='none')

def calc_loss(cls_preds, cls_labels, bbox_preds, bbox_labels, bbox_masks):
    batch_size, num_classes = cls_preds.shape[0], cls_preds.shape[2]
    cls = cls_loss(cls_preds.reshape(-1, num_classes),
                   cls_labels.reshape(-1)).reshape(batch_size, -1).mean(dim=1)
    bbox = bbox_loss(bbox_preds * bbox_masks,
                     bbox_labels * bbox_masks).mean(dim=1)
    return cls + bbox
# %%
def cls_eval(cls_preds, cls_labels):
    # Because the class prediction results are on the final dimension,
    # `argmax` needs to specify this dimension
    return float((cls_preds.argmax(dim=-1).type(
        cls_labels.dtype) == cls_labels).sum())

def bbox_eval(bbox_preds, bbox_labels, bbox_masks):
    return float((torch.abs((bbox_labels - bbox_preds) * bbox_masks)).sum())
# %%
num_epochs, timer = 2, d2l.Timer()  # port: 20 epochs: 2
animator = d2l.Animator(xlabel='epoch', xlim=[1, num_epochs],
                        legend=['class error', 'bbox mae'])
net = net.to(device)
for epoch in range(num_epochs):
    # Sum of training accuracy, no. of examples in sum of training accuracy,
    # Sum of absolute error, no. of examples in sum of absolute error
    metric = d2l.Accumulator(4)
    net.train()
    for features, target in train_iter:
        timer.start()
        trainer.zero_grad()
        X, Y = features.to(device), target.to(device)
        # Generate multiscale anchor boxes and predict their classes and
        # offsets
        anchors, cls_preds, bbox_preds = net(X)
        # Label the classes and offsets of these anchor boxes
        bbox_labels, bbox_masks, cls_labels = d2l.multibox_target(anchors, Y)
        # Calculate the loss function using the predicted and labeled values
        # of the classes and offsets
        l = calc_loss(cls_preds, cls_labels, bbox_preds, bbox_labels,
                      bbox_masks)
        l.mean().backward()
        trainer.step()
        metric.add(cls_eval(cls_preds, cls_labels), cls_labels.numel(),
                   bbox_eval(bbox_preds, bbox_labels, bbox_masks),
                   bbox_labels.numel())
    cls_err, bbox_mae = 1 - metric[0] / metric[1], metric[2] / metric[3]
    animator.add(epoch + 1, (cls_err, bbox_mae))
print(f'class err {cls_err:.2e}, bbox mae {bbox_mae:.2e}')
print(f'{len(train_iter.dataset) / timer.stop():.1f} examples/sec on '
      f'{str(device)}')
# %%
X = torchvision.io.read_image('../img/banana.jpg').unsqueeze(0).float()
img = X.squeeze(0).permute(1, 2, 0).long()
# %%
def predict(X):
    net.eval()
    anchors, cls_preds, bbox_preds = net(X.to(device))
    cls_probs = F.softmax(cls_preds, dim=2).permute(0, 2, 1)
    output = d2l.multibox_detection(cls_probs, bbox_preds, anchors)
    idx = [i for i, row in enumerate(output[0]) if row[0] != -1]
    return output[0, idx]

output = predict(X)
# %%
def display(img, output, threshold):
    d2l.set_figsize((5, 5))
    fig = d2l.plt.imshow(img)
    for row in output:
        score = float(row[1])
        if score < threshold:
            continue
        h, w = img.shape[:2]
        bbox = [row[2:6] * torch.tensor((w, h, w, h), device=row.device)]
        d2l.show_bboxes(fig.axes, bbox, '%.2f' % score, 'w')

display(img, output.cpu(), threshold=0.9)
# %%
def smooth_l1(data, scalar):
    out = []
    for i in data:
        if abs(i) < 1 / (scalar ** 2):
            out.append(((scalar * i) ** 2) / 2)
        else:
            out.append(abs(i) - 0.5 / (scalar ** 2))
    return torch.tensor(out)

sigmas = [10, 1, 0.5]
lines = ['-', '--', '-.']
x = torch.arange(-2, 2, 0.1)
d2l.set_figsize()

for l, s in zip(lines, sigmas):
    y = smooth_l1(x, scalar=s)
    d2l.plt.plot(x, y, l, label='sigma=%.1f' % s)
d2l.plt.legend();
# %%
def focal_loss(gamma, x):
    return -(1 - x) ** gamma * torch.log(x)

x = torch.arange(0.01, 1, 0.01)
for l, gamma in zip(lines, [0, 1, 5]):
    y = d2l.plt.plot(x, focal_loss(gamma, x), l, label='gamma=%.1f' % gamma)
d2l.plt.legend();
"""


TRANSPOSED_CONV = r"""
import torch
from torch import nn
from d2l import torch as d2l
# %%
def trans_conv(X, K):
    h, w = K.shape
    Y = d2l.zeros((X.shape[0] + h - 1, X.shape[1] + w - 1))
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            Y[i: i + h, j: j + w] += X[i, j] * K
    return Y
# %%
X = d2l.tensor([[0.0, 1.0], [2.0, 3.0]])
K = d2l.tensor([[0.0, 1.0], [2.0, 3.0]])
trans_conv(X, K)
# %%
X, K = X.reshape(1, 1, 2, 2), K.reshape(1, 1, 2, 2)
tconv = nn.ConvTranspose2d(1, 1, kernel_size=2, bias=False)
next(tconv.parameters()).data = K  # port: a layer's weight by position: tricycle's is weights (documented)
tconv(X)
# %%
tconv = nn.ConvTranspose2d(1, 1, kernel_size=2, padding=1, bias=False)
next(tconv.parameters()).data = K  # port: a layer's weight by position: tricycle's is weights (documented)
tconv(X)
# %%
tconv = nn.ConvTranspose2d(1, 1, kernel_size=2, stride=2, bias=False)
next(tconv.parameters()).data = K  # port: a layer's weight by position: tricycle's is weights (documented)
tconv(X)
# %%
X = torch.rand(size=(1, 10, 16, 16))
conv = nn.Conv2d(10, 20, kernel_size=5, padding=2, stride=3)
tconv = nn.ConvTranspose2d(20, 10, kernel_size=5, padding=2, stride=3)
tconv(conv(X)).shape == X.shape
# %%
X = d2l.arange(9.0).reshape(3, 3)
K = d2l.tensor([[1.0, 2.0], [3.0, 4.0]])
Y = d2l.corr2d(X, K)
Y
# %%
def kernel2matrix(K):
    k, W = d2l.zeros(5), d2l.zeros((4, 9))
    k[:2], k[3:5] = K[0, :], K[1, :]
    W[0, :5], W[1, 1:6], W[2, 3:8], W[3, 4:] = k, k, k, k
    return W

W = kernel2matrix(K)
W
# %%
Y == d2l.matmul(W, d2l.reshape(X, -1)).reshape(2, 2)
# %%
Z = trans_conv(Y, K)
Z == d2l.matmul(W.T, d2l.reshape(Y, -1)).reshape(3, 3)
"""


FCN = r"""
from d2l import torch as d2l
import torch
import torchvision
from torch import nn
from torch.nn import functional as F
# %%
pretrained_net = torchvision.models.resnet18(pretrained=True)
list(pretrained_net.children())[-3:]
# %%
net = nn.Sequential(*list(pretrained_net.children())[:-2])
# %%
X = torch.rand(size=(1, 3, 32, 64))  # port: 320x480 pixels: 32x64
net(X).shape
# %%
num_classes = 21
net.add_module('final_conv', nn.Conv2d(128, num_classes, kernel_size=1))  # port: 512 channels: 128 (the stand-in resnet18's quarter widths)
net.add_module('transpose_conv', nn.ConvTranspose2d(num_classes, num_classes,
                                    kernel_size=64, padding=16, stride=32))
# %%
def bilinear_kernel(in_channels, out_channels, kernel_size):
    factor = (kernel_size + 1) // 2
    if kernel_size % 2 == 1:
        center = factor - 1
    else:
        center = factor - 0.5
    og = (torch.arange(kernel_size).reshape(-1, 1),
          torch.arange(kernel_size).reshape(1, -1))
    filt = (1 - torch.abs(og[0] - center) / factor) * \
           (1 - torch.abs(og[1] - center) / factor)
    weight = torch.zeros((in_channels, out_channels,
                          kernel_size, kernel_size))
    weight[range(in_channels), range(out_channels), :, :] = filt
    return weight
# %%
conv_trans = nn.ConvTranspose2d(3, 3, kernel_size=4, padding=1, stride=2,
                                bias=False)
next(conv_trans.parameters()).data.copy_(bilinear_kernel(3, 3, 4));  # port: a layer's weight by position: tricycle's is weights (documented)
# %%
img = torchvision.transforms.ToTensor()(d2l.np.load('../img/catdog.npy')[::8, ::8])  # port: the book's photo (PIL, not in tricycle's test extra): a synthetic (H, W, 3) uint8 image the test wrote, an eighth of its size each way
X = img.unsqueeze(0)
Y = conv_trans(X)
out_img = Y[0].permute(1, 2, 0).detach()
# %%
d2l.set_figsize()
print('input image shape:', img.permute(1, 2, 0).shape)
d2l.plt.imshow(img.permute(1, 2, 0));
print('output image shape:', out_img.shape)
d2l.plt.imshow(out_img);
# %%
W = bilinear_kernel(num_classes, num_classes, 64)
next(net.transpose_conv.parameters()).data.copy_(W);  # port: a layer's weight by position: tricycle's is weights (documented)
# %%
batch_size, crop_size = 2, (32, 64)  # port: 32 images of 320x480 pixels: 2 of 32x64
train_iter, test_iter = d2l.load_data_voc(batch_size, crop_size)
# %%
def loss(inputs, targets):
    return F.cross_entropy(inputs, targets, reduction='none').mean(1).mean(1)

num_epochs, lr, wd, devices = 1, 0.001, 1e-3, [d2l.try_gpu()]  # port: 5 epochs: 1; try_all_gpus() is [] without a GPU (the book's fails then under torch too): try_gpu's CPU
trainer = torch.optim.SGD(net.parameters(), lr=lr, weight_decay=wd)
d2l.train_ch13(net, train_iter, test_iter, loss, trainer, num_epochs, devices)
# %%
def predict(img):
    X = test_iter.dataset.normalize_image(img).unsqueeze(0)
    pred = net(X.to(devices[0])).argmax(dim=1)
    return pred.reshape(pred.shape[1], pred.shape[2])
# %%
def label2image(pred):
    colormap = torch.tensor(d2l.VOC_COLORMAP, device=devices[0])
    X = pred.long()
    return colormap[X, :]
# %%
voc_dir = '../data/VOCdevkit/VOC2012'  # port: no download: a small synthetic set the test wrote there
test_images, test_labels = d2l.read_voc_images(voc_dir, False)
n, imgs = 2, []  # port: 4 images: 2
for i in range(n):
    crop_rect = (0, 0, 32, 64)  # port: 320x480 pixels: 32x64
    X = torchvision.transforms.functional.crop(test_images[i], *crop_rect)
    pred = label2image(predict(X))
    imgs += [X.permute(1,2,0), pred.cpu(),
             torchvision.transforms.functional.crop(
                 test_labels[i], *crop_rect).permute(1,2,0)]
shown = imgs[::3] + imgs[1::3] + imgs[2::3]  # port: d2l.show_images(..., 3, n, scale=2) not drawn (axes: seconds)
"""


NEURAL_STYLE = r"""
from d2l import torch as d2l
import torch
import torchvision
from torch import nn

d2l.set_figsize()
content_img = d2l.np.load('../img/rainier.npy')  # port: the book's photo (PIL, not in tricycle's test extra): a synthetic (H, W, 3) uint8 image the test wrote
d2l.plt.imshow(content_img);
# %%
style_img = d2l.np.load('../img/autumn-oak.npy')  # port: as above
d2l.plt.imshow(style_img);
# %%
rgb_mean = torch.tensor([0.485, 0.456, 0.406])
rgb_std = torch.tensor([0.229, 0.224, 0.225])

def preprocess(img, image_shape):
    transforms = torchvision.transforms.Compose([
        torchvision.transforms.Resize(image_shape),
        torchvision.transforms.ToTensor(),
        torchvision.transforms.Normalize(mean=rgb_mean, std=rgb_std)])
    return transforms(img).unsqueeze(0)

def postprocess(img):
    img = img[0].to(rgb_std.device)
    img = torch.clamp(img.permute(1, 2, 0) * rgb_std + rgb_mean, 0, 1)
    return torchvision.transforms.ToPILImage()(img.permute(2, 0, 1))
# %%
pretrained_net = torchvision.models.vgg19(pretrained=True)
# %%
style_layers, content_layers = [0, 5, 10, 19, 28], [25]
# %%
net = nn.Sequential(*[pretrained_net.features[i] for i in
                      range(max(content_layers + style_layers) + 1)])
# %%
def extract_features(X, content_layers, style_layers):
    contents = []
    styles = []
    for i in range(len(net)):
        X = net[i](X)
        if i in style_layers:
            styles.append(X)
        if i in content_layers:
            contents.append(X)
    return contents, styles
# %%
def get_contents(image_shape, device):
    content_X = preprocess(content_img, image_shape).to(device)
    contents_Y, _ = extract_features(content_X, content_layers, style_layers)
    return content_X, contents_Y

def get_styles(image_shape, device):
    style_X = preprocess(style_img, image_shape).to(device)
    _, styles_Y = extract_features(style_X, content_layers, style_layers)
    return style_X, styles_Y
# %%
def content_loss(Y_hat, Y):
    # We detach the target content from the tree used to dynamically compute
    # the gradient: this is a stated value, not a variable. Otherwise the loss
    # will throw an error.
    return torch.square(Y_hat - Y.detach()).mean()
# %%
def gram(X):
    num_channels, n = X.shape[1], d2l.size(X) // X.shape[1]
    X = d2l.reshape(X, (num_channels, n))
    return d2l.matmul(X, X.T) / (num_channels * n)
# %%
def style_loss(Y_hat, gram_Y):
    return torch.square(gram(Y_hat) - gram_Y.detach()).mean()
# %%
def tv_loss(Y_hat):
    return 0.5 * (d2l.abs(Y_hat[:, :, 1:, :] - Y_hat[:, :, :-1, :]).mean() +
                  d2l.abs(Y_hat[:, :, :, 1:] - Y_hat[:, :, :, :-1]).mean())
# %%
content_weight, style_weight, tv_weight = 1, 1e4, 10

def compute_loss(X, contents_Y_hat, styles_Y_hat, contents_Y, styles_Y_gram):
    # Calculate the content, style, and total variance losses respectively
    contents_l = [content_loss(Y_hat, Y) * content_weight for Y_hat, Y in zip(
        contents_Y_hat, contents_Y)]
    styles_l = [style_loss(Y_hat, Y) * style_weight for Y_hat, Y in zip(
        styles_Y_hat, styles_Y_gram)]
    tv_l = tv_loss(X) * tv_weight
    # Add up all the losses
    l = sum(styles_l + contents_l + [tv_l])
    return contents_l, styles_l, tv_l, l
# %%
class SynthesizedImage(nn.Module):
    def __init__(self, img_shape, **kwargs):
        super(SynthesizedImage, self).__init__(**kwargs)
        self.weight = nn.Parameter(torch.rand(*img_shape))

    def forward(self):
        return self.weight
# %%
def get_inits(X, device, lr, styles_Y):
    gen_img = SynthesizedImage(X.shape).to(device)
    gen_img.weight.data.copy_(X.data)
    trainer = torch.optim.Adam(gen_img.parameters(), lr=lr)
    styles_Y_gram = [gram(Y) for Y in styles_Y]
    return gen_img(), styles_Y_gram, trainer
# %%
def train(X, contents_Y, styles_Y, device, lr, num_epochs, lr_decay_epoch):
    X, styles_Y_gram, trainer = get_inits(X, device, lr, styles_Y)
    scheduler = torch.optim.lr_scheduler.StepLR(trainer, lr_decay_epoch, 0.8)
    animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                            xlim=[10, num_epochs],
                            legend=['content', 'style', 'TV'],
                            ncols=2, figsize=(7, 2.5))
    for epoch in range(num_epochs):
        trainer.zero_grad()
        contents_Y_hat, styles_Y_hat = extract_features(
            X, content_layers, style_layers)
        contents_l, styles_l, tv_l, l = compute_loss(
            X, contents_Y_hat, styles_Y_hat, contents_Y, styles_Y_gram)
        l.backward()
        trainer.step()
        scheduler.step()
        if (epoch + 1) % 10 == 0:
            animator.axes[1].imshow(postprocess(X))
            animator.add(epoch + 1, [float(sum(contents_l)),
                                     float(sum(styles_l)), float(tv_l)])
    return X
# %%
device, image_shape = d2l.try_gpu(), (32, 48)  # PIL Image (h, w)  # port: (300, 450): (32, 48)
net = net.to(device)
content_X, contents_Y = get_contents(image_shape, device)
_, styles_Y = get_styles(image_shape, device)
output = train(content_X, contents_Y, styles_Y, device, 0.3, 20, 5)  # port: 500 epochs, decayed each 50: 20, each 5
"""


VISION = r'''
import os

import numpy as np
import torch


def resized(image, size):
    """An (H, W, ...) image resized to ``size`` (nearest neighbour)."""
    rows = np.arange(size[0]) * image.shape[0] // size[0]
    cols = np.arange(size[1]) * image.shape[1] // size[1]
    return image[rows][:, cols]


def pair(size):
    return (size, size) if isinstance(size, int) else tuple(size)


class Resize:
    def __init__(self, size):
        self.size = pair(size)

    def __call__(self, image):
        return resized(image, self.size)


class CenterCrop:
    def __init__(self, size):
        self.size = pair(size)

    def __call__(self, image):
        top, left = ((n - m) // 2 for n, m in zip(image.shape, self.size))
        return image[top : top + self.size[0], left : left + self.size[1]]


class RandomHorizontalFlip:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, image):
        return image[:, ::-1] if np.random.rand() < self.p else image


class RandomVerticalFlip(RandomHorizontalFlip):
    def __call__(self, image):
        return image[::-1] if np.random.rand() < self.p else image


class RandomResizedCrop:
    """A random part of the image (its area a ``scale`` of the image's, its width over its
    height in ``ratio``), resized to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
        self.size, self.scale, self.ratio = pair(size), scale, ratio

    def __call__(self, image):
        height, width = image.shape[:2]
        for _ in range(10):
            area = height * width * np.random.uniform(*self.scale)
            aspect = np.exp(np.random.uniform(*np.log(self.ratio)))
            w, h = round(np.sqrt(area * aspect)), round(np.sqrt(area / aspect))
            if 0 < w <= width and 0 < h <= height:
                top, left = np.random.randint(height - h + 1), np.random.randint(width - w + 1)
                return resized(image[top : top + h, left : left + w], self.size)
        return resized(image, self.size)


class ColorJitter:
    """Brightness, contrast and saturation scaled by factors drawn in [1 - x, 1 + x], the hue
    turned about the grey axis by a fraction drawn in [-hue, hue] of a turn."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness, self.contrast = brightness, contrast
        self.saturation, self.hue = saturation, hue

    def __call__(self, image):
        x = image.astype(np.float32) / 255
        if self.brightness:
            x = x * np.random.uniform(1 - self.brightness, 1 + self.brightness)
        if self.contrast:
            x = x.mean() + (x - x.mean()) * np.random.uniform(1 - self.contrast, 1 + self.contrast)
        if self.saturation:
            grey = x.mean(-1, keepdims=True)
            x = grey + (x - grey) * np.random.uniform(1 - self.saturation, 1 + self.saturation)
        if self.hue:
            angle = 2 * np.pi * np.random.uniform(-self.hue, self.hue)
            cross = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]]) / np.sqrt(3)
            turn = np.cos(angle) * np.eye(3) + (1 - np.cos(angle)) / 3 + np.sin(angle) * cross
            x = x @ turn.T.astype(np.float32)
        return (np.clip(x, 0, 1) * 255).round().astype(np.uint8)


class ToTensor:
    """An (H, W, C) or (H, W) uint8 image as a (C, H, W) float32 tensor in [0, 1]."""

    def __call__(self, image):
        image = image[..., None] if image.ndim == 2 else image
        return torch.tensor(np.ascontiguousarray(image.transpose(2, 0, 1)) / np.float32(255))


class Normalize:
    def __init__(self, mean, std):
        self.mean = np.asarray(mean, dtype=np.float32)[:, None, None]
        self.std = np.asarray(std, dtype=np.float32)[:, None, None]

    def __call__(self, x):
        return (x - torch.tensor(self.mean)) / torch.tensor(self.std)


class ToPILImage:
    """A (C, H, W) float tensor in [0, 1] as an (H, W, C) uint8 image."""

    def __call__(self, x):
        return (np.asarray(x.detach().numpy()).transpose(1, 2, 0) * 255).astype(np.uint8)


class RandomCrop:
    @staticmethod
    def get_params(image, output_size):
        height, width = image.shape[-2:]
        h, w = output_size
        return np.random.randint(height - h + 1), np.random.randint(width - w + 1), h, w


def crop(image, top, left, height, width):
    return image[..., top : top + height, left : left + width]


class CIFAR10:
    """CIFAR-10's place: ``CIFAR[train]``, (N, 16, 16, 3) uint8 images and their labels."""

    def __init__(self, root, train=True, transform=None, download=False):
        self.data, self.targets = CIFAR[train]
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        image = self.data[index]
        return (image if self.transform is None else self.transform(image)), int(self.targets[index])


class ImageFolder:
    """The images under ``root``'s class folders (``.npy`` (H, W, 3) uint8 arrays), labelled
    by their folder's place in the sorted names."""

    def __init__(self, root, transform=None):
        self.classes = sorted(os.listdir(root))
        self.samples = [(os.path.join(root, c, f), i) for i, c in enumerate(self.classes)
                        for f in sorted(os.listdir(os.path.join(root, c)))]
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        image = np.load(path)
        return (image if self.transform is None else self.transform(image)), label


def read_image(path, mode=None):
    """A (C, H, W) uint8 image (a ``.npy`` file here, whatever its name)."""
    return torch.tensor(np.load(path))


class ImageReadMode:
    RGB = "RGB"


class Frame:
    """pandas' ``read_csv`` frame of integers, as the bananas' reader uses it."""

    def __init__(self, columns, rows, index=None):
        self.columns, self.rows, self.index = columns, rows, index

    def set_index(self, column):
        at = self.columns.index(column)
        rows = [r[:at] + r[at + 1:] for r in self.rows]
        return Frame(self.columns[:at] + self.columns[at + 1:], rows, [r[at] for r in self.rows])

    def iterrows(self):
        return zip(self.index, self.rows)


def read_csv(name):
    with open(name) as f:
        columns, *rows = [line.strip().split(",") for line in f if line.strip()]
    return Frame(columns, [[r[0]] + [int(v) for v in r[1:]] for r in rows])
'''

MODELS = (
    RESNET
    + r'''
def resnet18(pretrained=False):  # port: a random network, no download
    return ResNet(BasicBlock, [1, 1, 1, 1])


class VGG(nn.Module):
    """torchvision's VGG-19 ``features`` (configuration E) at a sixteenth of the widths."""

    def __init__(self):
        super().__init__()
        layers, channels = [], 3
        for width in [4, 4, "M", 8, 8, "M", 16, 16, 16, 16, "M", 32, 32, 32, 32, "M", 32, 32, 32, 32, "M"]:
            if width == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                layers += [nn.Conv2d(channels, width, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
                channels = width
        self.features = nn.Sequential(*layers)


def vgg19(pretrained=False):  # port: a random network, no download
    return VGG()
'''
)


def cifar(rng) -> dict:
    """CIFAR-10's stand-in: 16-pixel images, each class its own tint, 20 to train on and 8
    to test on, keyed by ``train``."""
    tints = rng.uniform(0.1, 0.9, (10, 3))
    split = {}
    for train, n in (True, 20), (False, 8):
        labels = rng.integers(0, 10, n)
        x = tints[labels][:, None, None] + rng.normal(0, 0.15, (n, 16, 16, 3))
        split[train] = ((np.clip(x, 0, 1) * 255).astype(np.uint8), labels)
    return split


@functools.cache
def synthetic() -> dict:
    """What the chapter reads, small and synthetic, by its path under the notebooks' parent
    folder (``img`` and ``data``): photos as (H, W, 3) uint8 arrays, the hot dogs'
    ``ImageFolder``, the bananas' (3, 64, 64) images (a yellow box each) and ``label.csv``, and
    VOC's images, their class colours and the lists of their names; ``.npy`` arrays whatever
    their names, or text."""
    rng = np.random.default_rng(0)
    files = {}

    def image(h, w):
        v, u = np.mgrid[0:h, 0:w] / max(h, w)
        x = np.stack([np.sin(7 * u), np.cos(5 * v), np.sin(3 * (u + v))], -1) * 0.4 + 0.5
        return (np.clip(x + rng.normal(0, 0.05, x.shape), 0, 1) * 255).astype(np.uint8)

    for name, shape in ("cat1", (40, 50)), ("catdog", (561, 728)), ("rainier", (48, 72)), ("autumn-oak", (40, 60)):  # fmt: skip
        files[f"img/{name}.npy"] = image(*shape)
    for split, n in ("train", 10), ("test", 4):
        for label, tint in ("hotdog", [0.3, 0, -0.3]), ("not-hotdog", [-0.3, 0, 0.3]):
            for i in range(n):
                x = np.clip(image(40, 40) / 255 + tint, 0, 1)
                files[f"data/hotdog/{split}/{label}/{i}.npy"] = (x * 255).astype(np.uint8)
    for split, n in ("bananas_train", 8), ("bananas_val", 4):
        rows = ["img_name,label,xmin,ymin,xmax,ymax"]
        for i in range(n):
            x = image(64, 64).transpose(2, 0, 1).copy()  # (3, 64, 64)
            w, h = rng.integers(12, 28, 2)
            left, top = rng.integers(0, 64 - w), rng.integers(0, 64 - h)
            x[:, top : top + h, left : left + w] = np.array([230, 200, 40])[:, None, None]
            files[f"data/banana-detection/{split}/images/{i}.png"] = x
            rows.append(f"{i}.png,0,{left},{top},{left + w},{top + h}")
        files[f"data/banana-detection/{split}/label.csv"] = "\n".join(rows) + "\n"
    files["img/banana.jpg"] = files["data/banana-detection/bananas_val/images/0.png"]
    voc = "data/VOCdevkit/VOC2012"
    colours = np.array([[0, 0, 0], [128, 0, 0], [0, 128, 0]], dtype=np.uint8)  # VOC's first three
    for split, n in ("train", 10), ("val", 2):
        files[f"{voc}/ImageSets/Segmentation/{split}.txt"] = "\n".join(f"{split}{i}" for i in range(n)) + "\n"  # fmt: skip
        for i in range(n):
            classes = np.kron(
                rng.integers(0, 3, (4, 4)), np.ones((9, 17), dtype=np.int64)
            )  # (36, 68)
            x = image(36, 68) // 2 + colours[classes] // 2
            files[f"{voc}/JPEGImages/{split}{i}.jpg"] = x.transpose(2, 0, 1).copy()
            files[f"{voc}/SegmentationClass/{split}{i}.png"] = colours[classes].transpose(2, 0, 1).copy()  # fmt: skip
    return files


def write_data(folder, *parts: str) -> None:
    """``synthetic()``'s files whose paths start with one of ``parts``, in ``folder``."""
    for name, content in synthetic().items():
        if name.startswith(parts):
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                path.write_text(content)
            else:
                with open(path, "wb") as f:
                    np.save(f, content)


def stand_ins(lib, monkeypatch, original=d2l_port.stand_ins) -> None:
    """tests/d2l_port.py's stand-ins (its ``Compose`` kept), and what this chapter calls
    besides (``VISION``, ``MODELS``) in ``<lib>vision`` and pandas."""
    original(lib, monkeypatch)
    name = lib.__name__ + "vision"
    space = {"CIFAR": cifar(np.random.default_rng(1))}
    exec(VISION.replace("torch", lib.__name__), space)
    vision, module = sys.modules[name], d2l_port.module
    transforms = vision.transforms
    for key in "Resize", "CenterCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "ColorJitter", "ToTensor", "Normalize", "ToPILImage", "RandomCrop":  # fmt: skip
        setattr(transforms, key, space[key])
    transforms.functional = module(f"{name}.transforms.functional", monkeypatch, crop=space["crop"])
    vision.datasets.CIFAR10, vision.datasets.ImageFolder = space["CIFAR10"], space["ImageFolder"]
    image = module(f"{name}.io.image", monkeypatch, ImageReadMode=space["ImageReadMode"])
    vision.io = module(f"{name}.io", monkeypatch, read_image=space["read_image"], image=image)
    vision.models = module(f"{name}.models", monkeypatch)
    exec(MODELS.replace("torch", lib.__name__), vision.models.__dict__)
    sys.modules["pandas"].read_csv = space["read_csv"]


def build(lib, monkeypatch, extra="", original=d2l_port.build):
    """tests/d2l_port.py's ``build``, its ``Animator``s kept (``d2l.animators``): the points
    ``train_ch13`` and the style transfer draw."""
    built = original(lib, monkeypatch, extra)
    built.animators, init = [], built.Animator.__init__

    def kept(self, *args, **kwargs):
        init(self, *args, **kwargs)
        built.animators.append(self)

    built.Animator.__init__ = kept
    return built


def both(script: str, tmp_path, monkeypatch, *data: str):
    """d2l_port's ``both`` with ``D2L_VISION``, this chapter's stand-ins and its ``data``
    (``write_data``'s parts), torch's print options put back after (the anchor section sets
    them)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    write_data(tmp_path, *data)
    monkeypatch.setattr(d2l_port, "stand_ins", stand_ins)
    monkeypatch.setattr(d2l_port, "build", build)
    try:
        return d2l_port.both(script, tmp_path, monkeypatch, extra=D2L_VISION)
    finally:
        torch.set_printoptions(profile="default")
        tricycle.set_printoptions(profile="default")


def printed(text: str) -> list[str]:
    """``normal`` (test_d2l_cnn's), objects' addresses aside."""
    return normal(re.sub(r" at 0x[0-9a-f]+", "", text))


def trained(space: dict, index: int = 0, column: int = 0) -> list[float]:
    """The points the ``index``-th ``Animator`` drew on its ``column``-th line."""
    return [float(y) for y in space["d2l"].animators[index].Y[column]]


def same_outputs(their_model, our_model, shape, seed=1, rtol=1e-4, atol=1e-5) -> None:
    """``same_numbers`` for a model whose output is a tuple of tensors: tricycle's model given
    torch's weights gives torch's outputs, and the gradients of its parameters and input
    under a weighted sum of them."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    missing, unexpected = tricycle.nn.from_torch(our_model, their_model.state_dict())
    assert missing == unexpected == []
    x = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    results = []
    for lib, model in (torch, their_model), (tricycle, our_model):
        inputs = lib.tensor(x, requires_grad=True)
        model.zero_grad()
        outs = model(inputs)
        total = sum((out * lib.tensor(np.linspace(-1, 1, out.shape[-1], dtype=np.float32))).sum() for out in outs)  # fmt: skip
        total.backward()
        results.append([host(out) for out in outs] + [host(inputs.grad)])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    ours, theirs = dict(our_model.named_parameters()), dict(their_model.named_parameters())
    assert len(ours) == len(theirs)
    for (name, p), q in zip(ours.items(), theirs.values(), strict=True):
        np.testing.assert_allclose(host(p.grad), host(q.grad), rtol=rtol, atol=atol, err_msg=name)


def values(text: str) -> list[float]:
    """The numbers printed (objects' addresses and dtypes aside)."""
    text = re.sub(r" at 0x[0-9a-f]+|(name|grad_fn|dtype)=[^,)\]]*|float32|int64|float64", "", text)
    return [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", text)]


# ------------------------------------------------------------------ the sections
def test_image_augmentation(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(IMAGE_AUGMENTATION, tmp_path, monkeypatch, "img/cat1")
    assert printed(ours) == printed(theirs)
    for mine, torchs in zip(our["applied"], their["applied"], strict=True):  # the same draws
        assert all(np.array_equal(a, b) for a, b in zip(mine, torchs, strict=True))
    for space in their, our:  # the book's ResNet under Adam: the second epoch's loss lower
        found = trained(space)
        assert len(found) == 10 and np.isfinite(found).all() and found[-1] < found[4], found
    given_torchs(their["net"], our["net"], (2, 3, 16, 16), train=False)


def test_fine_tuning(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(FINE_TUNING, tmp_path, monkeypatch, "data/hotdog")
    assert printed(ours) == printed(theirs)
    assert our["hotdog_w"].shape == tuple(their["hotdog_w"].shape) == (1, 128)
    assert not any(p.requires_grad for p in our["finetune_net"].parameters())
    for space in their, our:  # both runs drew their losses, finite
        for index in 0, 1:
            assert len(trained(space, index)) == 5 and np.isfinite(trained(space, index)).all()
    # gradients in the hundreds: float32 sums agree to a few units in 1e6 of them
    given_torchs(
        their["pretrained_net"], our["pretrained_net"], (2, 3, 32, 32), train=False, atol=1e-2
    )


def test_bounding_box(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(BOUNDING_BOX, tmp_path, monkeypatch, "img/catdog")
    assert printed(ours) == printed(theirs) and values(ours) == values(theirs)
    same(our["box_corner_to_center"](our["boxes"]), their["box_corner_to_center"](their["boxes"]))


def test_anchor(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(ANCHOR, tmp_path, monkeypatch, "img/catdog")
    assert printed(ours) == printed(theirs) and values(ours) == values(theirs)
    same(our["Y"], their["Y"])
    np.testing.assert_allclose(
        host(our["labels"][0]), host(their["labels"][0]), rtol=1e-6
    )  # offsets
    for mine, torchs in zip(our["labels"][1:], their["labels"][1:], strict=True):  # masks, classes
        np.testing.assert_array_equal(host(mine), host(torchs))
    np.testing.assert_array_equal(host(our["output"]), host(their["output"]))
    # random boxes on a 4x5 map: the book's library's target and detections are torch's
    rng = np.random.default_rng(3)
    corners = np.sort(rng.uniform(0, 1, (2, 3, 2, 2)), axis=2).transpose(0, 1, 3, 2).reshape(2, 3, 4)  # fmt: skip
    truth = np.concatenate([rng.integers(0, 3, (2, 3, 1)), corners], -1).astype(np.float32)
    probs = rng.dirichlet(np.ones(4), (2, 100)).transpose(0, 2, 1).astype(np.float32)
    offsets = rng.normal(0, 1, (2, 400)).astype(np.float32)
    found = []
    for space, lib in (their, their["torch"]), (our, our["tricycle"]):
        d2l = space["d2l"]
        anchors = d2l.multibox_prior(lib.zeros((1, 3, 4, 5)), sizes=[0.75, 0.5, 0.25], ratios=[1, 2, 0.5])  # fmt: skip
        target = d2l.multibox_target(anchors, lib.tensor(truth))
        detected = d2l.multibox_detection(lib.tensor(probs), lib.tensor(offsets), anchors)
        found.append([host(t) for t in (anchors, *target, detected)])
    for mine, torchs in zip(found[1], found[0], strict=True):
        np.testing.assert_allclose(mine, torchs, rtol=1e-6, atol=1e-6)
    assert found[1][2].sum() > 0 and (found[1][4][..., 0] >= 0).any()  # some anchors matched, kept


def test_ssd(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SSD, tmp_path, monkeypatch, "data/banana", "img/banana")
    assert printed(ours) == printed(theirs)
    for space in their, our:  # class error and box error drawn each epoch, the box error falls
        errors, maes = trained(space, 0, 0), trained(space, 0, 1)
        assert len(errors) == len(maes) == 2 and maes[1] < maes[0], (errors, maes)
    for name in "smooth_l1", "focal_loss":  # the losses' curves: torch's
        x = np.linspace(0.05, 0.95, 7).astype(np.float32)
        args = [(our["tricycle"].tensor(x), 1.0), (their["torch"].tensor(x), 1.0)]
        if name == "focal_loss":
            args = [(2, a) for a, _ in args]
        same(our[name](*args[0]), their[name](*args[1]))
    for space in their, our:  # with the running statistics it learned
        space["net"].eval()
    same_outputs(their["net"], our["net"], (2, 3, 64, 64), atol=1e-4)


def test_transposed_conv(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(TRANSPOSED_CONV, tmp_path, monkeypatch)
    assert printed(ours) == printed(theirs) and values(ours) == values(theirs)
    for name in "Y", "W", "Z":
        same(our[name], their[name])
    assert "False" not in ours  # each of the book's checks holds: trans_conv and the matrices


def test_fcn(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(FCN, tmp_path, monkeypatch, "img/catdog", "data/VOC")
    assert printed(ours) == printed(theirs)
    for name in "W", "Y":  # the bilinear kernel and the image it upsampled: torch's
        same(our[name], their[name], atol=1e-5)
    for space in their, our:
        assert np.isfinite(trained(space)).all()
    # gradients in the hundreds: float32 sums agree to a few units in 1e6 of them
    given_torchs(their["net"], our["net"], (2, 3, 32, 64), train=False, atol=1e-2)


def test_neural_style(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(
        NEURAL_STYLE, tmp_path, monkeypatch, "img/rainier", "img/autumn"
    )
    assert printed(ours) == printed(theirs)
    for space in their, our:  # the content, style and variation losses drawn at 10 and 20
        losses = [trained(space, 0, i) for i in range(3)]
        assert all(len(v) == 2 for v in losses) and sum(v[1] for v in losses) < sum(v[0] for v in losses), losses  # fmt: skip
    x = np.random.default_rng(2).normal(size=(1, 3, 32, 48)).astype(np.float32)
    same_numbers(their["net"], our["net"], (1, 3, 32, 48))
    for name in "gram", "tv_loss":
        same(our[name](our["tricycle"].tensor(x)), their[name](their["torch"].tensor(x)))


def test_the_held_library_is_the_books():
    """``D2L_VISION`` is the book's repository's ``d2l/torch.py``, in its order, but for the
    lines marked ``# port:`` (where the repository's read-only mirror is here)."""
    held, matched, others = d2l_port.against_book(D2L_VISION, d2l_port.book())
    assert others
    assert len(matched) > len(held) - 20

"""pytorch/examples, run on tricycle with ``torch`` replaced by ``tricycle`` (docs/pytorch.md's
promise), the method of ``tests/test_torch_scripts.py``: each example's model and training
loop as the official repository has it, run under torch (skipped without torch) and then,
with the one textual substitution, under tricycle; both learn, and they give the same kinds
and shapes of results (or print the same lines, numbers aside).

- ``gcn/main.py``: ``GraphConv`` and ``GCN``, and ``load_cora`` as it is, on a synthetic
  citation graph written in Cora's two files: ``np.genfromtxt``, ``torch.FloatTensor``,
  ``LongTensor``, ``torch.sum(..., dim=1)``, masked writes, ``torch.diag(...).to_sparse()``,
  ``torch.sparse_coo_tensor`` (repeated edges summed), ``torch.eye(V) + adj_mat``,
  ``torch.spmm``, Adam with weight decay, ``NLLLoss`` on index-selected rows;
- ``gat/main.py``: ``GraphAttentionLayer`` (``torch.empty(size=...)``, ``xavier_normal_`` of a
  3-D tensor, ``mT``, ``view``/``permute``, ``torch.where`` against a constant mask,
  ``F.dropout(..., training=...)``) and ``GAT`` on the same graph;
- ``legacy/snli``: ``model.py`` as it is (``Bottle``, a mixin that calls ``nn.Linear.forward``
  through ``super``; a bidirectional ``LSTM`` from ``new_zeros`` states; ``ht[-2:]
  .transpose(0, 1).contiguous().view``) and ``train.py``'s loop (``torch.max(answer, 1)[1]``,
  checkpoints of the whole model with ``torch.save``, ``torch.backends.mps.is_available()``),
  on synthetic sentence pairs in place of torchtext's SNLI.

What differs from the example's text is marked on its line with ``# port:`` and the reason:
argparse's defaults as constants, smaller sizes and epochs, synthetic data in place of the
downloads, a ``results`` dict the test reads, ``__script__`` for ``__main__``; the embedding's
``weight`` is taken by position (tricycle's is ``weights``) and GCN's ``torch.Tensor(*sizes)``
is ``torch.empty``: tricycle's ``Tensor(x)`` holds x (``Tensor(16)`` is a 0-d tensor), so it
cannot also be torch's legacy constructor of a shape. The fixes the examples needed are
tested against torch at the end: the sparse constructors as dense tensors, the legacy typed
constructors, ``empty(size=)``, ``torch.sum``/``mean`` with ``dim``, ``torch.backends.mps``.
"""

# ruff: noqa: E501, W291, W293

import numpy as np
import pytest

from tests.test_torch_examples_a import both as both_script
from tests.test_torch_examples_b import both as both_files
from tests.test_torch_examples_b import lines, numbers
from tests.test_torch_scripts import learned, same_kind

# torch's note that its sparse tensors skip their checks (load_cora's sparse_coo_tensor)
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")

# the Cora files in their format, written by both graph scripts in place of the download
WRITE_CORA = r'''
def write_cora(path='./cora'):  # port: Cora's place, written in its two files' format (no download)
    # 150 papers of 3 subjects; a paper's words are mostly its subject's, it cites mostly its own
    rng = np.random.default_rng(0)
    subjects = np.array(['Neural_Networks', 'Theory', 'Rule_Learning'])
    V, n_words = 150, 40
    label = rng.integers(0, 3, V)
    paper_id = rng.choice(np.arange(1000, 100000), V, replace=False)
    p_word = np.full((3, n_words), 0.03)
    for s in range(3):
        p_word[s, 12 * s:12 * s + 12] = 0.3
    words = (rng.random((V, n_words)) < p_word[label]).astype(int)
    cites = []
    for i in range(V):
        for _ in range(3):
            same = rng.random() < 0.9
            pool = np.flatnonzero((label == label[i]) == same)
            cites.append((paper_id[rng.choice(pool)], paper_id[i]))
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, 'cora.content'), 'w') as f:
        for i in range(V):
            f.write('\t'.join([str(paper_id[i]), *map(str, words[i]), subjects[label[i]]]) + '\n')
    np.savetxt(os.path.join(path, 'cora.cites'), np.array(cites), fmt='%d', delimiter='\t')
'''


GCN = r'''
import os
# port: `import requests` and `import tarfile` dropped (no download)
import time
import numpy as np
import argparse

import torch
from torch import nn
import torch.nn.functional as F
from torch.optim import Adam


class GraphConv(nn.Module):
    """
        Graph Convolutional Layer described in "Semi-Supervised Classification with Graph Convolutional Networks".

        Given an input feature representation for each node in a graph, the Graph Convolutional Layer aims to aggregate
        information from the node's neighborhood to update its own representation. This is achieved by applying a graph
        convolutional operation that combines the features of a node with the features of its neighboring nodes.

        Mathematically, the Graph Convolutional Layer can be described as follows:

            H' = f(D^(-1/2) * A * D^(-1/2) * H * W)

        where:
            H: Input feature matrix with shape (N, F_in), where N is the number of nodes and F_in is the number of 
                input features per node.
            A: Adjacency matrix of the graph with shape (N, N), representing the relationships between nodes.
            W: Learnable weight matrix with shape (F_in, F_out), where F_out is the number of output features per node.
            D: The degree matrix.
    """
    def __init__(self, input_dim, output_dim, use_bias=False):
        super(GraphConv, self).__init__()

        # Initialize the weight matrix W (in this case called `kernel`)
        self.kernel = nn.Parameter(torch.empty(input_dim, output_dim))  # port: tricycle lacks torch.Tensor(*sizes): its Tensor(x) holds x
        nn.init.xavier_normal_(self.kernel) # Initialize the weights using Xavier initialization

        # Initialize the bias (if use_bias is True)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.empty(output_dim))  # port: as above (its Tensor(16) is 0-d)
            nn.init.zeros_(self.bias) # Initialize the bias to zeros

    def forward(self, input_tensor, adj_mat):
        """
        Performs a graph convolution operation.

        Args:
            input_tensor (torch.Tensor): Input tensor representing node features.
            adj_mat (torch.Tensor): Normalized adjacency matrix representing graph structure.

        Returns:
            torch.Tensor: Output tensor after the graph convolution operation.
        """

        support = torch.mm(input_tensor, self.kernel) # Matrix multiplication between input and weight matrix
        output = torch.spmm(adj_mat, support) # Sparse matrix multiplication between adjacency matrix and support
        # Add the bias (if bias is not None)
        if self.bias is not None:
            output = output + self.bias

        return output


class GCN(nn.Module):
    """
    Graph Convolutional Network (GCN) as described in the paper `"Semi-Supervised Classification with Graph 
    Convolutional Networks" <https://arxiv.org/pdf/1609.02907.pdf>`.

    The Graph Convolutional Network is a deep learning architecture designed for semi-supervised node 
    classification tasks on graph-structured data. It leverages the graph structure to learn node representations 
    by propagating information through the graph using graph convolutional layers.

    The original implementation consists of two stacked graph convolutional layers. The ReLU activation function is 
    applied to the hidden representations, and the Softmax activation function is applied to the output representations.
    """
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super(GCN, self).__init__()

        # Define the Graph Convolution layers
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)

        # Define the dropout layer
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        """
        Performs forward pass of the Graph Convolutional Network (GCN).

        Args:
            input_tensor (torch.Tensor): Input node feature matrix with shape (N, input_dim), where N is the number of nodes
                and input_dim is the number of input features per node.
            adj_mat (torch.Tensor): Normalized adjacency matrix of the graph with shape (N, N), representing the relationships between
                nodes.

        Returns:
            torch.Tensor: Output tensor with shape (N, output_dim), representing the predicted class probabilities for each node.
        """

        # Perform the first graph convolutional layer
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x) # Apply ReLU activation function
        x = self.dropout(x) # Apply dropout regularization

        # Perform the second graph convolutional layer
        x = self.gc2(x, adj_mat)

        # Apply log-softmax activation function for classification
        return F.log_softmax(x, dim=1)


def load_cora(path='./cora', device='cpu'):
    """
    The graph convolutional operation rquires the normalized adjacency matrix: D^(-1/2) * A * D^(-1/2). This step 
    scales the adjacency matrix such that the features of neighboring nodes are weighted appropriately during 
    aggregation. The steps involved in the renormalization trick are as follows:
        - Compute the degree matrix.
        - Compute the inverse square root of the degree matrix.
        - Multiply the inverse square root of the degree matrix with the adjacency matrix.
    """

    # Set the paths to the data files
    content_path = os.path.join(path, 'cora.content')
    cites_path = os.path.join(path, 'cora.cites')

    # Load data from files
    content_tensor = np.genfromtxt(content_path, dtype=np.dtype(str))
    cites_tensor = np.genfromtxt(cites_path, dtype=np.int32)

    # Process features
    features = torch.FloatTensor(content_tensor[:, 1:-1].astype(np.int32)) # Extract feature values
    scale_vector = torch.sum(features, dim=1) # Compute sum of features for each node
    scale_vector = 1 / scale_vector # Compute reciprocal of the sums
    scale_vector[scale_vector == float('inf')] = 0 # Handle division by zero cases
    scale_vector = torch.diag(scale_vector).to_sparse() # Convert the scale vector to a sparse diagonal matrix
    features = scale_vector @ features # Scale the features using the scale vector

    # Process labels
    classes, labels = np.unique(content_tensor[:, -1], return_inverse=True) # Extract unique classes and map labels to indices
    labels = torch.LongTensor(labels) # Convert labels to a tensor

    # Process adjacency matrix
    idx = content_tensor[:, 0].astype(np.int32) # Extract node indices
    idx_map = {id: pos for pos, id in enumerate(idx)} # Create a dictionary to map indices to positions

    # Map node indices to positions in the adjacency matrix
    edges = np.array(
        list(map(lambda edge: [idx_map[edge[0]], idx_map[edge[1]]], 
            cites_tensor)), dtype=np.int32)

    V = len(idx) # Number of nodes
    E = edges.shape[0] # Number of edges
    adj_mat = torch.sparse_coo_tensor(edges.T, torch.ones(E), (V, V), dtype=torch.int64) # Create the initial adjacency matrix as a sparse tensor
    adj_mat = torch.eye(V) + adj_mat # Add self-loops to the adjacency matrix

    degree_mat = torch.sum(adj_mat, dim=1) # Compute the sum of each row in the adjacency matrix (degree matrix)
    degree_mat = torch.sqrt(1 / degree_mat) # Compute the reciprocal square root of the degrees
    degree_mat[degree_mat == float('inf')] = 0 # Handle division by zero cases
    degree_mat = torch.diag(degree_mat).to_sparse() # Convert the degree matrix to a sparse diagonal matrix

    adj_mat = degree_mat @ adj_mat @ degree_mat # Apply the renormalization trick

    return features.to_sparse().to(device), labels.to(device), adj_mat.to_sparse().to(device)

# WRITE_CORA


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val, print_every=10):
    start_t = time.time()
    model.train()
    optimizer.zero_grad()

    # Forward pass
    output = model(*input) 
    loss = criterion(output[mask_train], target[mask_train]) # Compute the loss using the training mask

    loss.backward()
    optimizer.step()
    results["losses"].append(loss.item())  # port: the test reads the losses

    # Evaluate the model performance on training and validation sets
    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)

    if epoch % print_every == 0:
        # Print the training progress at specified intervals
        print(f'Epoch: {epoch:04d} ({(time.time() - start_t):.4f}s) loss_train: {loss_train:.4f} acc_train: {acc_train:.4f} loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}')


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]

        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == '__script__':  # port: run by the test, not as __main__
    class args:  # port: argparse's defaults as constants
        epochs = 60  # port: 200
        lr = 0.01
        l2 = 5e-4
        dropout_p = 0.5
        hidden_dim = 16
        val_every = 20
        include_bias = False
        no_accel = False
        dry_run = False
        seed = 42

    use_accel = not args.no_accel and torch.accelerator.is_available()

    torch.manual_seed(args.seed)

    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device('cpu')

    print(f'Using {device} device')

    cora_url = 'https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz'
    print('Downloading dataset...')
    write_cora()  # port: the synthetic graph in place of the download

    print('Loading dataset...')
    features, labels, adj_mat = load_cora(device=device)
    idx = torch.randperm(len(labels)).to(device)
    idx_test, idx_val, idx_train = idx[:50], idx[50:75], idx[75:]  # port: 150 nodes, not 2708

    gcn = GCN(features.shape[1], args.hidden_dim, labels.max().item() + 1, args.include_bias, args.dropout_p).to(device)
    optimizer = Adam(gcn.parameters(), lr=args.lr, weight_decay=args.l2)
    criterion = nn.NLLLoss()

    for epoch in range(args.epochs):
        train_iter(epoch + 1, gcn, optimizer, criterion, (features, adj_mat), labels, idx_train, idx_val, args.val_every)
        if args.dry_run:
            break

    loss_test, acc_test = test(gcn, criterion, (features, adj_mat), labels, idx_test)
    print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
    results["accuracy"], results["loss_type"], results["acc_type"] = acc_test, type(loss_test), type(acc_test)  # port: the test reads them
    results["features_shape"], results["adj_shape"] = tuple(features.shape), tuple(adj_mat.shape)  # port: as above
'''.replace("# WRITE_CORA", WRITE_CORA.strip())  # the port's data, in both

GAT = r'''
import os
import time
# port: `import requests` and `import tarfile` dropped (no download)
import numpy as np
import argparse

import torch
from torch import nn
import torch.nn.functional as F
from torch.optim import Adam


################################
###  GAT LAYER DEFINITION    ###
################################

class GraphAttentionLayer(nn.Module):
    """
    Graph Attention Layer (GAT) as described in the paper `"Graph Attention Networks" <https://arxiv.org/pdf/1710.10903.pdf>`.

        This operation can be mathematically described as:

            e_ij = a(W h_i, W h_j)
            α_ij = softmax_j(e_ij) = exp(e_ij) / Σ_k(exp(e_ik))     
            h_i' = σ(Σ_j(α_ij W h_j))
            
            where h_i and h_j are the feature vectors of nodes i and j respectively, W is a learnable weight matrix,
            a is an attention mechanism that computes the attention coefficients e_ij, and σ is an activation function.

    """
    def __init__(self, in_features: int, out_features: int, n_heads: int, concat: bool = False, dropout: float = 0.4, leaky_relu_slope: float = 0.2):
        super(GraphAttentionLayer, self).__init__()

        self.n_heads = n_heads # Number of attention heads
        self.concat = concat # wether to concatenate the final attention heads
        self.dropout = dropout # Dropout rate

        if concat: # concatenating the attention heads
            self.out_features = out_features # Number of output features per node
            assert out_features % n_heads == 0 # Ensure that out_features is a multiple of n_heads
            self.n_hidden = out_features // n_heads
        else: # averaging output over the attention heads (Used in the main paper)
            self.n_hidden = out_features

        #  A shared linear transformation, parametrized by a weight matrix W is applied to every node
        #  Initialize the weight matrix W 
        self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))

        # Initialize the attention weights a
        self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))

        self.leakyrelu = nn.LeakyReLU(leaky_relu_slope) # LeakyReLU activation function
        self.softmax = nn.Softmax(dim=1) # softmax activation function to the attention coefficients

        self.reset_parameters() # Reset the parameters


    def reset_parameters(self):
        """
        Reinitialize learnable parameters.
        """
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)
    

    def _get_attention_scores(self, h_transformed: torch.Tensor):
        """calculates the attention scores e_ij for all pairs of nodes (i, j) in the graph
        in vectorized parallel form. for each pair of source and target nodes (i, j),
        the attention score e_ij is computed as follows:

            e_ij = LeakyReLU(a^T [Wh_i || Wh_j]) 

            where || denotes the concatenation operation, and a and W are the learnable parameters.

        Args:
            h_transformed (torch.Tensor): Transformed feature matrix with shape (n_nodes, n_heads, n_hidden),
                where n_nodes is the number of nodes and out_features is the number of output features per node.

        Returns:
            torch.Tensor: Attention score matrix with shape (n_heads, n_nodes, n_nodes), where n_nodes is the number of nodes.
        """
        
        source_scores = torch.matmul(h_transformed, self.a[:, :self.n_hidden, :])
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden:, :])

        # broadcast add 
        # (n_heads, n_nodes, 1) + (n_heads, 1, n_nodes) = (n_heads, n_nodes, n_nodes)
        e = source_scores + target_scores.mT
        return self.leakyrelu(e)

    def forward(self,  h: torch.Tensor, adj_mat: torch.Tensor):
        """
        Performs a graph attention layer operation.

        Args:
            h (torch.Tensor): Input tensor representing node features.
            adj_mat (torch.Tensor): Adjacency matrix representing graph structure.

        Returns:
            torch.Tensor: Output tensor after the graph convolution operation.
        """
        n_nodes = h.shape[0]

        # Apply linear transformation to node feature -> W h
        # output shape (n_nodes, n_hidden * n_heads)
        h_transformed = torch.mm(h, self.W)
        h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)

        # splitting the heads by reshaping the tensor and putting heads dim first
        # output shape (n_heads, n_nodes, n_hidden)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
        
        # getting the attention scores
        # output shape (n_heads, n_nodes, n_nodes)
        e = self._get_attention_scores(h_transformed)

        # Set the attention score for non-existent edges to -9e15 (MASKING NON-EXISTENT EDGES)
        connectivity_mask = -9e16 * torch.ones_like(e)
        e = torch.where(adj_mat > 0, e, connectivity_mask) # masked attention scores
        
        # attention coefficients are computed as a softmax over the rows
        # for each column j in the attention score matrix e
        attention = F.softmax(e, dim=-1)
        attention = F.dropout(attention, self.dropout, training=self.training)

        # final node embeddings are computed as a weighted average of the features of its neighbors
        h_prime = torch.matmul(attention, h_transformed)

        # concatenating/averaging the attention heads
        # output shape (n_nodes, out_features)
        if self.concat:
            h_prime = h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.out_features)
        else:
            h_prime = h_prime.mean(dim=0)

        return h_prime

################################
### MAIN GAT NETWORK MODULE  ###
################################

class GAT(nn.Module):
    """
    Graph Attention Network (GAT) as described in the paper `"Graph Attention Networks" <https://arxiv.org/pdf/1710.10903.pdf>`.
    Consists of a 2-layer stack of Graph Attention Layers (GATs). The fist GAT Layer is followed by an ELU activation.
    And the second (final) layer is a GAT layer with a single attention head and softmax activation function. 
    """
    def __init__(self,
        in_features,
        n_hidden,
        n_heads,
        num_classes,
        concat=False,
        dropout=0.4,
        leaky_relu_slope=0.2):
        """ Initializes the GAT model. 

        Args:
            in_features (int): number of input features per node.
            n_hidden (int): output size of the first Graph Attention Layer.
            n_heads (int): number of attention heads in the first Graph Attention Layer.
            num_classes (int): number of classes to predict for each node.
            concat (bool, optional): Wether to concatinate attention heads or take an average over them for the
                output of the first Graph Attention Layer. Defaults to False.
            dropout (float, optional): dropout rate. Defaults to 0.4.
            leaky_relu_slope (float, optional): alpha (slope) of the leaky relu activation. Defaults to 0.2.
        """

        super(GAT, self).__init__()

        # Define the Graph Attention layers
        self.gat1 = GraphAttentionLayer(
            in_features=in_features, out_features=n_hidden, n_heads=n_heads,
            concat=concat, dropout=dropout, leaky_relu_slope=leaky_relu_slope
            )
        
        self.gat2 = GraphAttentionLayer(
            in_features=n_hidden, out_features=num_classes, n_heads=1,
            concat=False, dropout=dropout, leaky_relu_slope=leaky_relu_slope
            )
        

    def forward(self, input_tensor: torch.Tensor , adj_mat: torch.Tensor):
        """
        Performs a forward pass through the network.

        Args:
            input_tensor (torch.Tensor): Input tensor representing node features.
            adj_mat (torch.Tensor): Adjacency matrix representing graph structure.

        Returns:
            torch.Tensor: Output tensor after the forward pass.
        """

        # Apply the first Graph Attention layer
        x = self.gat1(input_tensor, adj_mat)
        x = F.elu(x) # Apply ELU activation function to the output of the first layer

        # Apply the second Graph Attention layer
        x = self.gat2(x, adj_mat)

        return F.log_softmax(x, dim=1) # Apply log softmax activation function

################################
### LOADING THE CORA DATASET ###
################################

def load_cora(path='./cora', device='cpu'):
    """
    Loads the Cora dataset. The dataset is downloaded from https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz.

    """

    # Set the paths to the data files
    content_path = os.path.join(path, 'cora.content')
    cites_path = os.path.join(path, 'cora.cites')

    # Load data from files
    content_tensor = np.genfromtxt(content_path, dtype=np.dtype(str))
    cites_tensor = np.genfromtxt(cites_path, dtype=np.int32)

    # Process features
    features = torch.FloatTensor(content_tensor[:, 1:-1].astype(np.int32)) # Extract feature values
    scale_vector = torch.sum(features, dim=1) # Compute sum of features for each node
    scale_vector = 1 / scale_vector # Compute reciprocal of the sums
    scale_vector[scale_vector == float('inf')] = 0 # Handle division by zero cases
    scale_vector = torch.diag(scale_vector).to_sparse() # Convert the scale vector to a sparse diagonal matrix
    features = scale_vector @ features # Scale the features using the scale vector

    # Process labels
    classes, labels = np.unique(content_tensor[:, -1], return_inverse=True) # Extract unique classes and map labels to indices
    labels = torch.LongTensor(labels) # Convert labels to a tensor

    # Process adjacency matrix
    idx = content_tensor[:, 0].astype(np.int32) # Extract node indices
    idx_map = {id: pos for pos, id in enumerate(idx)} # Create a dictionary to map indices to positions

    # Map node indices to positions in the adjacency matrix
    edges = np.array(
        list(map(lambda edge: [idx_map[edge[0]], idx_map[edge[1]]], 
            cites_tensor)), dtype=np.int32)

    V = len(idx) # Number of nodes
    E = edges.shape[0] # Number of edges
    adj_mat = torch.sparse_coo_tensor(edges.T, torch.ones(E), (V, V), dtype=torch.int64) # Create the initial adjacency matrix as a sparse tensor
    adj_mat = torch.eye(V) + adj_mat # Add self-loops to the adjacency matrix

    # return features.to_sparse().to(device), labels.to(device), adj_mat.to_sparse().to(device)
    return features.to(device), labels.to(device), adj_mat.to(device)

#################################
### TRAIN AND TEST FUNCTIONS  ###
#################################

# WRITE_CORA


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val, print_every=10):
    start_t = time.time()
    model.train()
    optimizer.zero_grad()

    # Forward pass
    output = model(*input) 
    loss = criterion(output[mask_train], target[mask_train]) # Compute the loss using the training mask

    loss.backward()
    optimizer.step()
    results["losses"].append(loss.item())  # port: the test reads the losses

    # Evaluate the model performance on training and validation sets
    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)

    if epoch % print_every == 0:
        # Print the training progress at specified intervals
        print(f'Epoch: {epoch:04d} ({(time.time() - start_t):.4f}s) loss_train: {loss_train:.4f} acc_train: {acc_train:.4f} loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}')


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]

        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == '__script__':  # port: run by the test, not as __main__
    class args:  # port: argparse's defaults as constants, smaller
        epochs = 60  # port: 300
        lr = 0.005
        l2 = 5e-4
        dropout_p = 0.6
        hidden_dim = 16  # port: 64
        num_heads = 4  # port: 8
        concat_heads = False
        val_every = 20
        no_accel = False
        dry_run = False
        seed = 13

    torch.manual_seed(args.seed)

    use_accel = not args.no_accel and torch.accelerator.is_available()

    # Set the device to run on
    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device('cpu')
    print(f'Using {device} device')

    # Load the dataset
    cora_url = 'https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz'
    path = './cora'

    if os.path.isfile(os.path.join(path, 'cora.content')) and os.path.isfile(os.path.join(path, 'cora.cites')):
        print('Dataset already downloaded...')
    else:
        print('Downloading dataset...')
        write_cora()  # port: the synthetic graph in place of the download

    print('Loading dataset...')
    # Load the dataset
    features, labels, adj_mat = load_cora(device=device)
    # Split the dataset into training, validation, and test sets
    idx = torch.randperm(len(labels)).to(device)
    idx_test, idx_val, idx_train = idx[:50], idx[50:75], idx[75:]  # port: 150 nodes, not 2708


    # Create the model
    # The model consists of a 2-layer stack of Graph Attention Layers (GATs).
    gat_net = GAT(
        in_features=features.shape[1],          # Number of input features per node  
        n_hidden=args.hidden_dim,               # Output size of the first Graph Attention Layer
        n_heads=args.num_heads,                 # Number of attention heads in the first Graph Attention Layer
        num_classes=labels.max().item() + 1,    # Number of classes to predict for each node
        concat=args.concat_heads,               # Wether to concatinate attention heads
        dropout=args.dropout_p,                 # Dropout rate
        leaky_relu_slope=0.2                    # Alpha (slope) of the leaky relu activation
    ).to(device)

    # configure the optimizer and loss function
    optimizer = Adam(gat_net.parameters(), lr=args.lr, weight_decay=args.l2)
    criterion = nn.NLLLoss()

    # Train and evaluate the model
    for epoch in range(args.epochs):
        train_iter(epoch + 1, gat_net, optimizer, criterion, (features, adj_mat), labels, idx_train, idx_val, args.val_every)
        if args.dry_run:
            break
    loss_test, acc_test = test(gat_net, criterion, (features, adj_mat), labels, idx_test)
    print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
    results["accuracy"], results["loss_type"], results["acc_type"] = acc_test, type(loss_test), type(acc_test)  # port: the test reads them
    results["features_shape"], results["adj_shape"] = tuple(features.shape), tuple(adj_mat.shape)  # port: as above
'''.replace("# WRITE_CORA", WRITE_CORA.strip())  # the port's data, in both

# legacy/snli/model.py and util.py, as they are
SNLI_MODEL = r"""
import torch
import torch.nn as nn


class Bottle(nn.Module):

    def forward(self, input):
        if len(input.size()) <= 2:
            return super(Bottle, self).forward(input)
        size = input.size()[:2]
        out = super(Bottle, self).forward(input.view(size[0]*size[1], -1))
        return out.view(size[0], size[1], -1)


class Linear(Bottle, nn.Linear):
    pass


class Encoder(nn.Module):

    def __init__(self, config):
        super(Encoder, self).__init__()
        self.config = config
        input_size = config.d_proj if config.projection else config.d_embed
        dropout = 0 if config.n_layers == 1 else config.dp_ratio
        self.rnn = nn.LSTM(input_size=input_size, hidden_size=config.d_hidden,
                        num_layers=config.n_layers, dropout=dropout,
                        bidirectional=config.birnn)

    def forward(self, inputs):
        batch_size = inputs.size()[1]
        state_shape = self.config.n_cells, batch_size, self.config.d_hidden
        h0 = c0 = inputs.new_zeros(state_shape)
        outputs, (ht, ct) = self.rnn(inputs, (h0, c0))
        return ht[-1] if not self.config.birnn else ht[-2:].transpose(0, 1).contiguous().view(batch_size, -1)


class SNLIClassifier(nn.Module):

    def __init__(self, config):
        super(SNLIClassifier, self).__init__()
        self.config = config
        self.embed = nn.Embedding(config.n_embed, config.d_embed)
        self.projection = Linear(config.d_embed, config.d_proj)
        self.encoder = Encoder(config)
        self.dropout = nn.Dropout(p=config.dp_ratio)
        self.relu = nn.ReLU()
        seq_in_size = 2*config.d_hidden
        if self.config.birnn:
            seq_in_size *= 2
        lin_config = [seq_in_size]*2
        self.out = nn.Sequential(
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(seq_in_size, config.d_out))

    def forward(self, batch):
        prem_embed = self.embed(batch.premise)
        hypo_embed = self.embed(batch.hypothesis)
        if self.config.fix_emb:
            prem_embed = prem_embed.detach()
            hypo_embed = hypo_embed.detach()
        if self.config.projection:
            prem_embed = self.relu(self.projection(prem_embed))
            hypo_embed = self.relu(self.projection(hypo_embed))
        premise = self.encoder(prem_embed)
        hypothesis = self.encoder(hypo_embed)
        scores = self.out(torch.cat([premise, hypothesis], 1))
        return scores
"""

SNLI_UTIL = r'''
import os
from argparse import ArgumentParser

def makedirs(name):
    """helper function for python 2 and 3 to call os.makedirs()
       avoiding an error if the directory to be created already exists"""

    import os, errno

    try:
        os.makedirs(name)
    except OSError as ex:
        if ex.errno == errno.EEXIST and os.path.isdir(name):
            # ignore existing directory
            pass
        else:
            # a different error happened
            raise


def get_args():
    parser = ArgumentParser(description='PyTorch/torchtext SNLI example')
    parser.add_argument('--epochs', type=int, default=50,
                        help='the number of total epochs to run.')
    parser.add_argument('--batch_size', type=int, default=128,
                        help='batch size. (default: 128)')
    parser.add_argument('--d_embed', type=int, default=100,
                        help='the size of each embedding vector.')
    parser.add_argument('--d_proj', type=int, default=300,
                        help='the size of each projection layer.')
    parser.add_argument('--d_hidden', type=int, default=300,
                        help='the number of features in the hidden state.')
    parser.add_argument('--n_layers', type=int, default=1,
                        help='the number of recurrent layers. (default: 50)')
    parser.add_argument('--log_every', type=int, default=50,
                        help='iteration period to output log.')
    parser.add_argument('--lr',type=float, default=.001,
                        help='initial learning rate.')
    parser.add_argument('--dev_every', type=int, default=1000,
                        help='log period of validation results.')
    parser.add_argument('--save_every', type=int, default=1000,
                        help='model checkpoint period.')
    parser.add_argument('--dp_ratio', type=int, default=0.2,
                        help='probability of an element to be zeroed.')
    parser.add_argument('--no-bidirectional', action='store_false', dest='birnn',
                        help='disable bidirectional LSTM.')
    parser.add_argument('--preserve-case', action='store_false', dest='lower',
                        help='case-sensitivity.')
    parser.add_argument('--no-projection', action='store_false', dest='projection',
                        help='disable projection layer.')
    parser.add_argument('--train_embed', action='store_false', dest='fix_emb',
                        help='enable embedding word training.')
    parser.add_argument('--gpu', type=int, default=0,
                        help='gpu id to use. (default: 0)')
    parser.add_argument('--save_path', type=str, default='results',
                        help='save path of results.')
    parser.add_argument('--vector_cache', type=str, default=os.path.join(os.getcwd(), '.vector_cache/input_vectors.pt'),
                        help='name of vector cache directory, which saved input word-vectors.')
    parser.add_argument('--word_vectors', type=str, default='glove.6B.100d',
                        help='one of or a list containing instantiations of the GloVe, CharNGram, or Vectors classes.'
                        'Alternatively, one of or a list of available pretrained vectors: '
                        'charngram.100d fasttext.en.300d fasttext.simple.300d'
                        'glove.42B.300d glove.840B.300d glove.twitter.27B.25d'
                        'glove.twitter.27B.50d glove.twitter.27B.100d glove.twitter.27B.200d'
                        'glove.6B.50d glove.6B.100d glove.6B.200d glove.6B.300d')
    parser.add_argument('--resume_snapshot', type=str, default='',
                        help='model snapshot to resume.')
    parser.add_argument('--dry-run', action='store_true',
                        help='run only a few iterations')
    args = parser.parse_args()
    return args
'''

SNLI_TRAIN = r"""
import os
import time
import glob
from argparse import Namespace  # port: get_args' defaults below

import numpy as np  # port: the synthetic data below
import torch
import torch.optim as O
import torch.nn as nn

# port: torchtext's data and datasets dropped: a synthetic SNLI below

from model import SNLIClassifier
from util import makedirs  # port: get_args' defaults as constants below


args = Namespace(  # port: util.get_args' defaults as constants, smaller (a Namespace, as argparse's)
    epochs=8,  # port: 50
    batch_size=32,  # port: 128
    d_embed=16,  # port: 100
    d_proj=24,  # port: 300
    d_hidden=24,  # port: 300
    n_layers=1,
    log_every=10,  # port: 50
    lr=.001,
    dev_every=20,  # port: 1000
    save_every=20,  # port: 1000
    dp_ratio=0.2,
    birnn=True,
    lower=True,
    projection=True,
    fix_emb=True,
    gpu=0,
    save_path='results',
    word_vectors='glove.6B.100d',
    resume_snapshot='',
    dry_run=False,
)
torch.manual_seed(0)  # port: a seed, so that the test's accuracy threshold holds in every run


if torch.cuda.is_available():
    torch.cuda.set_device(args.gpu)
    device = torch.device('cuda:{}'.format(args.gpu))
elif torch.backends.mps.is_available():
    device = torch.device('mps')
else:
    device = torch.device('cpu')
device = torch.device('cpu')  # port: the synthetic batches below stay on the host, where the test runs


class Batch:  # port: torchtext's batch: (seq_len, batch) word ids and the labels
    def __init__(self, premise, hypothesis, label):
        self.premise, self.hypothesis, self.label = premise, hypothesis, label
        self.batch_size = len(label)


class BucketIterator(list):  # port: torchtext's BucketIterator over the batches
    def init_epoch(self):
        pass


# port: SNLI's place: 30 words in 3 groups; a sentence's words come from one group, and the label
# is the hypothesis' group minus the premise's (mod 3): the encoders must tell the groups apart
rng = np.random.default_rng(0)
def make(n_batches, seq_len=6):
    batches = []
    for _ in range(n_batches):
        premise_group, label = rng.integers(0, 3, (2, args.batch_size))
        hypothesis_group = (premise_group + label) % 3
        premise = 2 + 10 * premise_group + rng.integers(0, 10, (seq_len, args.batch_size))
        hypothesis = 2 + 10 * hypothesis_group + rng.integers(0, 10, (seq_len, args.batch_size))
        batches.append(Batch(torch.from_numpy(premise), torch.from_numpy(hypothesis), torch.from_numpy(label)))
    return BucketIterator(batches)
train_iter, dev_iter = make(20), make(4)  # port: data.BucketIterator.splits(...)
dev = range(4 * args.batch_size)  # port: the dev set's size
vectors = torch.from_numpy(rng.normal(size=(32, args.d_embed)).astype(np.float32))  # port: GloVe's place

config = args
config.n_embed = 32  # port: len(inputs.vocab): 30 words, <unk> and <pad>
config.d_out = 3  # port: len(answers.vocab)
config.n_cells = config.n_layers

# double the number of cells for bidirectional networks
if config.birnn:
    config.n_cells *= 2

if args.resume_snapshot:
    model = torch.load(args.resume_snapshot, map_location=device)
else:
    model = SNLIClassifier(config)
    if args.word_vectors:
        next(model.embed.parameters()).data.copy_(vectors)  # port: model.embed.weight (tricycle's: weights) by position; inputs.vocab.vectors
        model.to(device)

criterion = nn.CrossEntropyLoss()
opt = O.Adam(model.parameters(), lr=args.lr)

iterations = 0
start = time.time()
best_dev_acc = -1
header = '  Time Epoch Iteration Progress    (%Epoch)   Loss   Dev/Loss     Accuracy  Dev/Accuracy'
dev_log_template = ' '.join('{:>6.0f},{:>5.0f},{:>9.0f},{:>5.0f}/{:<5.0f} {:>7.0f}%,{:>8.6f},{:8.6f},{:12.4f},{:12.4f}'.split(','))
log_template =     ' '.join('{:>6.0f},{:>5.0f},{:>9.0f},{:>5.0f}/{:<5.0f} {:>7.0f}%,{:>8.6f},{},{:12.4f},{}'.split(','))
makedirs(args.save_path)
print(header)

for epoch in range(args.epochs):
    train_iter.init_epoch()
    n_correct, n_total = 0, 0
    for batch_idx, batch in enumerate(train_iter):

        # switch model to training mode, clear gradient accumulators
        model.train(); opt.zero_grad()

        iterations += 1

        # forward pass
        answer = model(batch)

        # calculate accuracy of predictions in the current batch
        n_correct += (torch.max(answer, 1)[1].view(batch.label.size()) == batch.label).sum().item()
        n_total += batch.batch_size
        train_acc = 100. * n_correct/n_total

        # calculate loss of the network output with respect to training labels
        loss = criterion(answer, batch.label)

        # backpropagate and update optimizer learning rate
        loss.backward(); opt.step()

        # checkpoint model periodically
        if iterations % args.save_every == 0:
            snapshot_prefix = os.path.join(args.save_path, 'snapshot')
            snapshot_path = snapshot_prefix + '_acc_{:.4f}_loss_{:.6f}_iter_{}_model.pt'.format(train_acc, loss.item(), iterations)
            torch.save(model, snapshot_path)
            for f in glob.glob(snapshot_prefix + '*'):
                if f != snapshot_path:
                    os.remove(f)

        # evaluate performance on validation set periodically
        if iterations % args.dev_every == 0:

            # switch model to evaluation mode
            model.eval(); dev_iter.init_epoch()

            # calculate accuracy on validation set
            n_dev_correct, dev_loss = 0, 0
            with torch.no_grad():
                for dev_batch_idx, dev_batch in enumerate(dev_iter):
                     answer = model(dev_batch)
                     n_dev_correct += (torch.max(answer, 1)[1].view(dev_batch.label.size()) == dev_batch.label).sum().item()
                     dev_loss = criterion(answer, dev_batch.label)
            dev_acc = 100. * n_dev_correct / len(dev)

            print(dev_log_template.format(time.time()-start,
                epoch, iterations, 1+batch_idx, len(train_iter),
                100. * (1+batch_idx) / len(train_iter), loss.item(), dev_loss.item(), train_acc, dev_acc))

            # update best validation set accuracy
            if dev_acc > best_dev_acc:

                # found a model with better validation set accuracy

                best_dev_acc = dev_acc
                snapshot_prefix = os.path.join(args.save_path, 'best_snapshot')
                snapshot_path = snapshot_prefix + '_devacc_{}_devloss_{}__iter_{}_model.pt'.format(dev_acc, dev_loss.item(), iterations)

                # save model, delete previous 'best_snapshot' files
                torch.save(model, snapshot_path)
                for f in glob.glob(snapshot_prefix + '*'):
                    if f != snapshot_path:
                        os.remove(f)

        elif iterations % args.log_every == 0:

            # print progress message
            print(log_template.format(time.time()-start,
                epoch, iterations, 1+batch_idx, len(train_iter),
                100. * (1+batch_idx) / len(train_iter), loss.item(), ' '*8, n_correct/n_total*100, ' '*12))
        if args.dry_run:
            break
"""


def test_gcn(tmp_path, monkeypatch):
    theirs, ours = both_script(GCN, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["loss_type"] is float and ours["acc_type"] is float
    assert ours["features_shape"] == (150, 40) and ours["adj_shape"] == (150, 150)
    for results in theirs, ours:
        assert len(results["losses"]) == 60
        learned(results, chance=1 / 3, margin=0.4)


def test_gat(tmp_path, monkeypatch):
    theirs, ours = both_script(GAT, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["loss_type"] is float and ours["acc_type"] is float
    for results in theirs, ours:
        assert len(results["losses"]) == 60
        learned(results, chance=1 / 3, margin=0.4)


def test_snli(tmp_path, monkeypatch):
    files = {"model.py": SNLI_MODEL, "util.py": SNLI_UTIL, "train.py": SNLI_TRAIN}
    theirs, ours = both_files(files, ["train.py"], tmp_path, monkeypatch)
    assert lines(ours[0]) == lines(theirs[0])
    for library, (printed, _) in (("torch", theirs), ("tricycle", ours)):
        dev_accuracy = numbers(r"\d+% +[\d.]+ +[\d.]+ +[\d.]+ +([\d.]+)", printed)
        assert len(dev_accuracy) == 8 and dev_accuracy[-1] > 80, (
            library,
            dev_accuracy,
        )  # chance: 33
        saved = sorted(path.name for path in (tmp_path / library / "results").iterdir())
        assert [name.split("_")[0] for name in saved] == ["best", "snapshot"], saved
    import tricycle  # noqa: PLC0415

    best = next((tmp_path / "tricycle" / "results").glob("best_snapshot*"))
    model = tricycle.load(best, weights_only=False)  # the whole model, as torch.save wrote it
    assert type(model).__name__ == "SNLIClassifier" and model.encoder.rnn.bidirectional


# ------------------------------------------------------------------ the fixes, against torch
def test_sparse_coo_tensor_is_torchs_dense_tensor_with_its_gradients():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    rng = np.random.default_rng(0)
    indices = np.array([[0, 2, 2, 1, 0], [1, 0, 0, 3, 1]])  # (0, 1) and (2, 0) twice: summed
    values, weights = rng.normal(size=(5, 2)), rng.normal(size=(3, 4, 2))  # a dense axis of 2
    theirs_values = torch.tensor(values, requires_grad=True)
    theirs = torch.sparse_coo_tensor(indices, theirs_values, (3, 4, 2)).to_dense()
    (theirs * torch.tensor(weights)).sum().backward()
    ours_values = tricycle.tensor(values, requires_grad=True)
    ours = tricycle.sparse_coo_tensor(indices, ours_values, (3, 4, 2)).to_dense()
    (ours * tricycle.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy())
    np.testing.assert_allclose(ours_values.grad.numpy(), theirs_values.grad.numpy())
    # load_cora's use: int64 ones, the size inferred or given, a dtype, dense + "sparse"
    theirs = torch.sparse_coo_tensor(indices, torch.ones(5), dtype=torch.int64)
    ours = tricycle.sparse_coo_tensor(indices, tricycle.ones(5), dtype=tricycle.int64)
    assert ours.dtype == np.int64 and ours.shape == tuple(theirs.shape) == (3, 4)
    np.testing.assert_array_equal(
        (tricycle.eye(3, 4) + ours).numpy(), (torch.eye(3, 4) + theirs).numpy()
    )
    with pytest.raises(ValueError, match=r"sparse_coo_tensor: .*size"):
        tricycle.sparse_coo_tensor(indices, tricycle.ones(5), (2, 4))  # row 2 is outside
    with pytest.raises(ValueError, match=r"sparse_coo_tensor: .*\(2, 5\).*\(4,\)"):
        tricycle.sparse_coo_tensor(indices, tricycle.ones(4), (3, 4))  # one value short


def test_spmm_and_to_sparse_give_torchs_products_and_gradients():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    rng = np.random.default_rng(1)
    adjacency = (rng.random((5, 5)) < 0.4) * rng.normal(size=(5, 5))  # (N, N), mostly zeros
    features, upstream = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    theirs_x = torch.tensor(features, requires_grad=True)
    theirs = torch.spmm(torch.tensor(adjacency).to_sparse(), theirs_x)  # (N, F)
    theirs.backward(torch.tensor(upstream))
    ours_x = tricycle.tensor(features, requires_grad=True)
    ours = tricycle.spmm(tricycle.tensor(adjacency).to_sparse(), ours_x)
    ours.backward(tricycle.tensor(upstream))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12)


def test_legacy_typed_constructors_and_empty_of_size_as_torch():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    data = np.array([[1, 0, 2], [0, 3, 0]], dtype=np.int32)
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor"):
        theirs, ours = getattr(torch, name)(data), getattr(tricycle, name)(data)
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert not np.shares_memory(ours.numpy(), data)  # a copy, as torch's
        assert getattr(tricycle, name)(2, 3).shape == tuple(getattr(torch, name)(2, 3).shape)
    assert tricycle.LongTensor([3, 1]).tolist() == torch.LongTensor([3, 1]).tolist()
    assert tricycle.FloatTensor().shape == tuple(torch.FloatTensor().shape) == (0,)
    assert tricycle.empty(size=(4, 2, 1)).shape == tuple(torch.empty(size=(4, 2, 1)).shape)
    with pytest.raises(TypeError, match=r"empty: .*\(4,\).*size=\(4,\)"):
        tricycle.empty(4, size=(4,))
    with pytest.raises(TypeError, match=r"FloatTensor: .*sizes as ints"):
        tricycle.FloatTensor([1.0], [2.0])


@pytest.mark.parametrize("name", ["sum", "mean"])
def test_top_level_sum_and_mean_take_torchs_dim(name):
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    x, upstream = np.random.default_rng(2).normal(size=(2, 3, 4)), np.arange(8.0).reshape(2, 1, 4)
    theirs_x = torch.tensor(x, requires_grad=True)
    theirs = getattr(torch, name)(theirs_x, dim=1, keepdim=True)  # (2, 1, 4)
    theirs.backward(torch.tensor(upstream))
    ours_x = tricycle.tensor(x, requires_grad=True)
    ours = getattr(tricycle, name)(ours_x, dim=1, keepdim=True)
    ours.backward(tricycle.tensor(upstream))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12)
    theirs_x.grad = ours_x.grad = None  # dtype= casts the input first, the gradient cast back
    theirs = getattr(torch, name)(theirs_x.float(), dim=-1, dtype=torch.float64)
    ours = getattr(tricycle, name)(ours_x.float(), dim=-1, dtype=tricycle.float64)
    assert ours.dtype == np.float64 and ours.shape == tuple(theirs.shape) == (2, 3)
    theirs.sum().backward(), ours.sum().backward()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(  # numpy's axis, as tricycle.sum always took it
        getattr(tricycle, name)(ours_x, axis=(0, 2)).numpy(),
        getattr(torch, name)(theirs_x, dim=(0, 2)).detach().numpy(),
    )


def test_backends_mps_answers_as_on_a_machine_without_metal():
    import tricycle  # noqa: PLC0415

    assert (
        tricycle.backends.mps.is_available() is False and tricycle.backends.mps.is_built() is False
    )
